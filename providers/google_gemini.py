"""Google Gemini ``generateContent``: pure converters and a thin aiohttp adapter.

Logprobs: ``generationConfig.responseLogprobs`` + ``logprobs`` (k); read from
``candidates[i].logprobsResult.chosenCandidates[j]`` with alternatives in ``topCandidates[j].candidates``.
A logprob of exactly 0.0 is a real value. Gemini's JSON is proto3 JSON, which omits fields at their
default value, so a candidate that has a ``token`` but no ``logProbability`` key carries 0.0 (certain);
an explicit ``null`` is missing. ``avgLogprobs`` without ``logprobsResult`` is not per-token data.
"""

from __future__ import annotations

from typing import Any

from probe.completion import ChatRequest, Completion, ProviderError
from probe.spec import ModelSpec
from providers.base import Provider
from providers.config import ResolvedConfig
from providers.errors import (
    classify_http_error,
    failure,
    is_logprob_refusal,
    parse_body,
    success_payload,
)
from providers.hosts import HostProfile
from providers.http import JsonHttpClient
from providers.normalize import (
    ChoiceDict,
    MalformedPayload,
    TokenDict,
    TopDict,
    build_completion,
    choice_with_tokens,
    clean_id,
    clean_logprob,
    count,
    make_token,
    make_top,
    token_string,
    unavailable_choice,
)
from providers.openai_chat import LogprobAsk
from providers.redact import Redactor

_BLOCKED = frozenset({"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"})


def gemini_request(req: ChatRequest, *, top_logprobs: int | None) -> dict[str, Any]:
    """The JSON body of a generateContent request; ``top_logprobs`` None: no logprob parameters."""
    system = [m.content for m in req.messages if m.role == "system"]
    contents = [{"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
                for m in req.messages if m.role != "system"]
    config: dict[str, Any] = {}
    if req.temperature is not None:
        config["temperature"] = req.temperature
    if req.top_p is not None:
        config["topP"] = req.top_p
    if req.max_tokens is not None:
        config["maxOutputTokens"] = req.max_tokens
    if req.n > 1:
        config["candidateCount"] = req.n
    if req.seed is not None:
        config["seed"] = req.seed
    if req.stop:
        config["stopSequences"] = list(req.stop)
    if top_logprobs is not None:
        config["responseLogprobs"] = True
        if top_logprobs > 0:
            config["logprobs"] = top_logprobs
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if config:
        body["generationConfig"] = config
    return body


def _gemini_logprob(cand: dict[str, Any]) -> float | None:
    if "logProbability" not in cand:
        return 0.0  # proto3 JSON omits a field at its default value: 0.0
    return clean_logprob(cand["logProbability"])


def _gemini_candidate(cand: Any) -> tuple[str, float | None, int | None]:
    if not isinstance(cand, dict):
        raise MalformedPayload("a logprobs candidate is not an object")
    return token_string(cand.get("token")), _gemini_logprob(cand), clean_id(cand.get("tokenId"))


def tokens_from_gemini(result: Any) -> list[TokenDict]:
    """``logprobsResult`` → tokens; the chosen token may be absent from its alternatives."""
    if not isinstance(result, dict):
        raise MalformedPayload("logprobsResult is not an object")
    chosen = result.get("chosenCandidates") or []
    tops = result.get("topCandidates") or []
    if not isinstance(chosen, list) or not isinstance(tops, list):
        raise MalformedPayload("logprobsResult arrays are not lists")
    out = []
    for i, c in enumerate(chosen):
        token, lp, tid = _gemini_candidate(c)
        alts: list[TopDict] = []
        if i < len(tops) and isinstance(tops[i], dict):
            alts = [make_top(t, a_lp, None, a_id)
                    for t, a_lp, a_id in (_gemini_candidate(a) for a in tops[i].get("candidates") or [])]
        out.append(make_token(token, lp, None, tid, alts))
    return out


def _candidate_text(cand: dict[str, Any]) -> str:
    content = cand.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return ""
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
                   and not p.get("thought"))


def choice_from_gemini(cand: Any, position: int, ask: LogprobAsk) -> ChoiceDict:
    if not isinstance(cand, dict):
        raise MalformedPayload("a candidate is not an object")
    index = cand.get("index", position)
    index = index if isinstance(index, int) and index >= 0 else position
    text = _candidate_text(cand)
    finish = cand.get("finishReason")
    finish = finish if isinstance(finish, str) else None
    refusal = f"blocked: {finish}" if finish in _BLOCKED else None
    result = cand.get("logprobsResult")
    if result is None:
        if not ask.requested:
            reason = "not_requested"
        elif not ask.sent:
            reason = ask.reason_if_unsent
        else:
            reason = "endpoint_dropped"
        return unavailable_choice(index=index, text=text, finish_reason=finish, reason=reason, refusal=refusal)
    return choice_with_tokens(index=index, text=text, finish_reason=finish, tokens=tokens_from_gemini(result),
                              top_k=ask.top_k if ask.sent else None, refusal=refusal)


def completion_from_gemini(payload: Any, ask: LogprobAsk, *, latency_s: float = 0.0) -> Completion:
    """A generateContent body → Completion. Raises MalformedPayload; a blocked prompt is a refusal."""
    if not isinstance(payload, dict):
        raise MalformedPayload("response body is not a JSON object")
    cands = payload.get("candidates")
    if not cands:
        feedback = payload.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if block:
            raise PromptBlocked(str(block))
        raise MalformedPayload("response has no candidates")
    if not isinstance(cands, list):
        raise MalformedPayload("candidates is not a list")
    meta = payload.get("usageMetadata")
    meta = meta if isinstance(meta, dict) else {}
    return build_completion([choice_from_gemini(c, i, ask) for i, c in enumerate(cands)],
                            model_reported=payload.get("modelVersion"),
                            input_tokens=count(meta.get("promptTokenCount")),
                            output_tokens=count(meta.get("candidatesTokenCount")), latency_s=latency_s,
                            top_k=ask.top_k if ask.sent else None)


class PromptBlocked(Exception):
    """Gemini blocked the prompt itself (promptFeedback.blockReason): recorded as a refusal."""


def gemini_ask(req: ChatRequest, profile: HostProfile, *, refused: bool) -> tuple[LogprobAsk, int | None]:
    if not req.logprobs:
        return LogprobAsk(requested=False, sent=False, top_k=None), None
    if refused:
        return LogprobAsk(requested=True, sent=False, top_k=None, reason_if_unsent="model_refused"), None
    k = min(req.top_logprobs or 0, profile.max_top_logprobs)
    return LogprobAsk(requested=True, sent=True, top_k=k), k


class GeminiProvider(Provider):
    """Gemini generateContent over the lean aiohttp client (key in the x-goog-api-key header)."""

    def __init__(self, spec: ModelSpec, profile: HostProfile, cfg: ResolvedConfig, redactor: Redactor) -> None:
        super().__init__(spec, profile, cfg.base_url, redactor)
        self._cfg = cfg
        model = spec.model if spec.model.startswith(("models/", "tunedModels/")) else f"models/{spec.model}"
        self._url = f"{cfg.base_url}/{model}:generateContent"
        headers = {"x-goog-api-key": cfg.api_key.get_secret_value()} if cfg.api_key else {}
        self._http = JsonHttpClient(headers=headers, timeout_s=cfg.timeout_s, redact=redactor)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _complete_once(self, req: ChatRequest) -> Completion:
        for _ in range(2):
            ask, top = gemini_ask(req, self.profile, refused=self.logprobs_refused)
            result = await self._http.post_json(self._url, gemini_request(req, top_logprobs=top))
            if result.status < 400:
                return self._read(result.status, result.headers, result.body, ask, result.latency_s)
            if top is not None and is_logprob_refusal(result.status, parse_body(result.body)):
                self.logprobs_refused = True
                continue
            break
        raise ProviderError(classify_http_error(result.status, result.headers, result.body, redact=self.redact,
                                                hint=f"check {self._cfg.key_hint}"))

    def _read(self, status: int, headers: Any, body: bytes, ask: LogprobAsk, latency_s: float) -> Completion:
        payload = success_payload(status, headers, body, result_key="candidates", redact=self.redact)
        try:
            return completion_from_gemini(payload, ask, latency_s=latency_s)
        except PromptBlocked as e:
            raise ProviderError(failure("refusal", f"prompt blocked: {e}", redact=self.redact,
                                        status_code=status)) from None
        except MalformedPayload as e:
            raise ProviderError(failure("malformed", f"HTTP {status}: {e}", redact=self.redact,
                                        status_code=status)) from None
