"""The Chat Completions adapter for OpenAI and every OpenAI-compatible host (thin IO over aiohttp)."""

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
    rejected_sampling_params,
    rejected_token_field,
    success_payload,
)
from providers.hosts import HostProfile
from providers.http import HttpResult, JsonHttpClient
from providers.normalize import MalformedPayload
from providers.openai_chat import LogprobAsk, chat_request_to_openai, completion_from_openai, logprob_ask
from providers.redact import Redactor

MAX_SENDS = 4  # the original, then without logprobs / a rejected sampling parameter / with the other token cap


def _auth_headers(profile: HostProfile, cfg: ResolvedConfig) -> dict[str, str]:
    if cfg.bearer_token is not None:
        return {"Authorization": f"Bearer {cfg.bearer_token.get_secret_value()}"}
    if cfg.api_key is None:
        return {}
    key = cfg.api_key.get_secret_value()
    if profile.auth == "api-key":
        return {"api-key": key}
    return {"Authorization": f"Bearer {key}"}


def chat_url(profile: HostProfile, cfg: ResolvedConfig, model: str) -> tuple[str, dict[str, str]]:
    """(URL, query parameters) of the chat endpoint; Azure uses deployment URLs + api-version."""
    if profile.azure and not cfg.base_url.endswith("/openai/v1"):
        base = cfg.base_url.removesuffix("/openai")
        return f"{base}/openai/deployments/{model}/chat/completions", {"api-version": cfg.api_version or ""}
    return f"{cfg.base_url}/chat/completions", {}


class OpenAIChatProvider(Provider):
    """OpenAI Chat Completions over a lean aiohttp client; one host profile decides the quirks."""

    def __init__(self, spec: ModelSpec, profile: HostProfile, cfg: ResolvedConfig, redactor: Redactor) -> None:
        super().__init__(spec, profile, cfg.base_url, redactor)
        self._cfg = cfg
        self._url, params = chat_url(profile, cfg, self.wire_model)
        self.max_tokens_field = profile.max_tokens_field
        self._http = JsonHttpClient(headers=_auth_headers(profile, cfg), timeout_s=cfg.timeout_s,
                                    redact=redactor, params=params)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _complete_once(self, req: ChatRequest) -> Completion:
        for _ in range(MAX_SENDS):
            ask, top = logprob_ask(req, self.profile, refused=self.logprobs_refused)
            body = chat_request_to_openai(req, self.profile, model=self.wire_model, top_logprobs=top,
                                          drop=self.dropped, max_tokens_field=self.max_tokens_field)
            result = await self._http.post_json(self._url, body)
            if result.status < 400:
                return self._read(result, ask)
            payload = parse_body(result.body)
            if not self._learn(result.status, payload, logprobs_sent=top is not None, body=body):
                break
        raise ProviderError(classify_http_error(result.status, result.headers, result.body, redact=self.redact,
                                                hint=f"check {self._cfg.key_hint}"))

    def _learn(self, status: int, payload: Any, *, logprobs_sent: bool, body: dict[str, Any]) -> bool:
        """Remember a logprob refusal or a rejected sampling parameter; True if worth re-sending."""
        if logprobs_sent and is_logprob_refusal(status, payload):
            self.logprobs_refused = True
            return True
        # a parameter this body carried was rejected: re-send without it. It may already be known
        # (another call in flight learned it first), which is why "sent" and not "new" decides.
        sent = [p for p in rejected_sampling_params(status, payload) if p in body]
        if sent:
            self.dropped = (*self.dropped, *(p for p in sent if p not in self.dropped))
            return True
        field = rejected_token_field(status, payload)
        if field is not None and field in body:  # reasoning models want max_completion_tokens, old hosts max_tokens
            self.max_tokens_field = "max_completion_tokens" if field == "max_tokens" else "max_tokens"
            return True
        return False

    def _read(self, result: HttpResult, ask: LogprobAsk) -> Completion:
        payload = success_payload(result.status, result.headers, result.body, result_key="choices",
                                  redact=self.redact, hint=f"check {self._cfg.key_hint}")
        try:
            return completion_from_openai(payload, ask, latency_s=result.latency_s, dropped=self.dropped)
        except MalformedPayload as e:
            raise ProviderError(failure("malformed", f"HTTP {result.status}: {e}", redact=self.redact,
                                        status_code=result.status)) from None
