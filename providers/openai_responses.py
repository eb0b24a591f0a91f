"""OpenAI Responses API through the official SDK (``max_retries=0``): a second wire format.

Logprobs need both ``include: ["message.output_text.logprobs"]`` and ``top_logprobs``; they come back in
``output[].content[type=output_text].logprobs[]`` with the same per-token shape as Chat Completions.
The API has no ``n`` (n > 1 is sent as n calls) and a minimum ``max_output_tokens`` of 16.
"""

from __future__ import annotations

import time
from typing import Any

import openai

from probe.completion import ChatRequest, Completion, ProviderError
from probe.spec import ModelSpec
from providers.base import Provider
from providers.config import ResolvedConfig
from providers.errors import (
    failure,
    is_logprob_refusal,
    rejected_sampling_params,
    success_payload,
)
from providers.hosts import HostProfile
from providers.normalize import (
    MalformedPayload,
    TokenDict,
    build_completion,
    choice_with_tokens,
    count,
    unavailable_choice,
)
from providers.openai_chat import LogprobAsk, logprob_ask, tokens_from_chat_shape
from providers.redact import Redactor
from providers.sdk import PerLoop, failure_from_sdk_exception, sdk_error_payload

LOGPROBS_INCLUDE = "message.output_text.logprobs"
MIN_OUTPUT_TOKENS = 16


def responses_request(req: ChatRequest, *, model: str, top_logprobs: int | None,
                      drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Keyword arguments of ``responses.create``; ``top_logprobs`` None: no logprob parameters."""
    kwargs: dict[str, Any] = {
        "model": model,
        "input": [{"role": m.role, "content": m.content} for m in req.messages],
        "store": False,
    }
    if req.max_tokens is not None:
        kwargs["max_output_tokens"] = max(MIN_OUTPUT_TOKENS, req.max_tokens)
    if req.temperature is not None and "temperature" not in drop:
        kwargs["temperature"] = req.temperature
    if req.top_p is not None and "top_p" not in drop:
        kwargs["top_p"] = req.top_p
    if top_logprobs is not None:
        kwargs["include"] = [LOGPROBS_INCLUDE]
        kwargs["top_logprobs"] = top_logprobs
    return kwargs


def completion_from_responses(payload: Any, ask: LogprobAsk, *, latency_s: float = 0.0,
                              dropped: tuple[str, ...] = ()) -> Completion:
    """A Response object (JSON) → Completion with one choice. Raises MalformedPayload."""
    if not isinstance(payload, dict) or not isinstance(payload.get("output"), list):
        raise MalformedPayload("response has no output list")
    texts: list[str] = []
    refusals: list[str] = []
    tokens: list[TokenDict] = []
    saw_logprobs = False
    for item in payload["output"]:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue  # reasoning items, tool calls: not text
        for part in item.get("content") or []:
            if not isinstance(part, dict):
                raise MalformedPayload("a content part is not an object")
            if part.get("type") == "output_text":
                texts.append(part.get("text") or "")
                lp = part.get("logprobs")
                if lp:
                    saw_logprobs = True
                    tokens.extend(tokens_from_chat_shape(lp))
            elif part.get("type") == "refusal":
                refusals.append(part.get("refusal") or "")
    text = "".join(texts)
    refusal = "".join(refusals) or None
    details = payload.get("incomplete_details")
    finish = details.get("reason") if isinstance(details, dict) else None
    finish = finish if isinstance(finish, str) else ("stop" if payload.get("status") == "completed" else None)
    if saw_logprobs or (ask.sent and not text):
        choice = choice_with_tokens(index=0, text=text, finish_reason=finish, tokens=tokens,
                                    top_k=ask.top_k if ask.sent else None, refusal=refusal)
    else:
        reason = ("not_requested" if not ask.requested else ask.reason_if_unsent if not ask.sent
                  else "endpoint_dropped")
        choice = unavailable_choice(index=0, text=text, finish_reason=finish, reason=reason, refusal=refusal)
    usage = payload.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return build_completion([choice], model_reported=payload.get("model"),
                            input_tokens=count(usage.get("input_tokens")),
                            output_tokens=count(usage.get("output_tokens")), latency_s=latency_s, dropped=dropped,
                            top_k=ask.top_k if ask.sent else None)


class OpenAIResponsesProvider(Provider):
    """OpenAI Responses API via ``openai.AsyncOpenAI(max_retries=0)``; probe reads the raw body."""

    def __init__(self, spec: ModelSpec, profile: HostProfile, cfg: ResolvedConfig, redactor: Redactor) -> None:
        super().__init__(spec, profile, cfg.base_url, redactor)
        self._cfg = cfg
        key = cfg.api_key.get_secret_value() if cfg.api_key else "unused"
        self._clients: PerLoop[openai.AsyncOpenAI] = PerLoop(
            lambda: openai.AsyncOpenAI(api_key=key, base_url=cfg.base_url, max_retries=0, timeout=cfg.timeout_s),
            lambda c: c.close())

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def _complete_once(self, req: ChatRequest) -> Completion:
        for _ in range(3):
            ask, top = logprob_ask(req, self.profile, refused=self.logprobs_refused)
            kwargs = responses_request(req, model=self.spec.model, top_logprobs=top, drop=self.dropped)
            start = time.perf_counter()
            try:
                raw = await self._clients.get().responses.with_raw_response.create(**kwargs)
            except openai.APIError as e:
                status, payload = sdk_error_payload(e)
                if top is not None and is_logprob_refusal(status, payload):
                    self.logprobs_refused = True
                    continue
                new = [p for p in rejected_sampling_params(status, payload) if p in kwargs and p not in self.dropped]
                if new:
                    self.dropped = (*self.dropped, *new)
                    continue
                fail = failure_from_sdk_exception(e, redact=self.redact, hint=f"check {self._cfg.key_hint}",
                                                  timeout_s=self._cfg.timeout_s)
                if fail is None:
                    raise
                raise ProviderError(fail) from None
            return self._read(raw.status_code, raw.headers, raw.content, ask, time.perf_counter() - start)
        raise ProviderError(failure("bad_request", "request rejected after dropping logprobs and sampling "
                                    "parameters", redact=self.redact))

    def _read(self, status: int, headers: Any, body: bytes, ask: LogprobAsk, latency_s: float) -> Completion:
        payload = success_payload(status, headers, body, result_key="output", redact=self.redact)
        try:
            return completion_from_responses(payload, ask, latency_s=latency_s, dropped=self.dropped)
        except MalformedPayload as e:
            raise ProviderError(failure("malformed", f"HTTP {status}: {e}", redact=self.redact,
                                        status_code=status)) from None
