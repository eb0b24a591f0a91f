"""Anthropic Messages through the official SDK (``max_retries=0``): pure converters + thin adapter.

The API has no logprobs: choices carry ``unavailable: provider_has_none`` when they were asked for
(if a response ever carries a ``logprobs`` object in the chat shape, it is read). SDK 2.x dropped the
sampling fields from its types, so temperature/top_p go through ``extra_body``; a model that rejects
one of them has it dropped, remembered, and listed in ``Completion.dropped_params``.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic

from probe.completion import ChatRequest, Completion, ProviderError
from probe.spec import ModelSpec
from providers.base import Provider
from providers.config import ResolvedConfig
from providers.errors import (
    failure,
    rejected_sampling_params,
    success_payload,
)
from providers.hosts import HostProfile
from providers.normalize import (
    ChoiceDict,
    MalformedPayload,
    build_completion,
    choice_with_tokens,
    count,
    unavailable_choice,
)
from providers.openai_chat import tokens_from_logprobs
from providers.redact import Redactor
from providers.sdk import PerLoop, failure_from_sdk_exception, sdk_error_payload

DEFAULT_MAX_TOKENS = 1024
_SAMPLING = ("temperature", "top_p")


def anthropic_request(req: ChatRequest, *, model: str, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Keyword arguments of ``messages.create`` (sampling parameters inside ``extra_body``)."""
    system = [m.content for m in req.messages if m.role == "system"]
    kwargs: dict[str, Any] = {
        "model": model,
        "max_tokens": req.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": [{"role": m.role, "content": m.content} for m in req.messages if m.role != "system"],
    }
    if system:
        kwargs["system"] = "\n\n".join(system)
    if req.stop:
        kwargs["stop_sequences"] = list(req.stop)
    extra: dict[str, Any] = {}
    if req.temperature is not None and "temperature" not in drop:
        extra["temperature"] = req.temperature
    if req.top_p is not None and "top_p" not in drop:
        extra["top_p"] = req.top_p
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def completion_from_anthropic(payload: Any, *, logprobs_requested: bool, latency_s: float = 0.0,
                              dropped: tuple[str, ...] = ()) -> Completion:
    """A Messages response body → Completion (one choice). Raises MalformedPayload."""
    if not isinstance(payload, dict) or payload.get("type") not in ("message", None):
        raise MalformedPayload("response body is not a message object")
    content = payload.get("content")
    if not isinstance(content, list):
        raise MalformedPayload("message content is not a list")
    text = "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                   and isinstance(b.get("text"), str))
    stop = payload.get("stop_reason")
    stop = stop if isinstance(stop, str) else None
    refusal = (text or "refusal") if stop == "refusal" else None
    tokens = tokens_from_logprobs(payload.get("logprobs"))
    choice: ChoiceDict
    if tokens is not None:
        choice = choice_with_tokens(index=0, text=text, finish_reason=stop, tokens=tokens, top_k=None,
                                    refusal=refusal)
    else:
        choice = unavailable_choice(index=0, text=text, finish_reason=stop, refusal=refusal,
                                    reason="provider_has_none" if logprobs_requested else "not_requested")
    usage = payload.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return build_completion([choice], model_reported=payload.get("model"),
                            input_tokens=count(usage.get("input_tokens")),
                            output_tokens=count(usage.get("output_tokens")), latency_s=latency_s, dropped=dropped)


class AnthropicProvider(Provider):
    """Anthropic Messages via ``anthropic.AsyncAnthropic(max_retries=0)``; the raw body is read by probe."""

    def __init__(self, spec: ModelSpec, profile: HostProfile, cfg: ResolvedConfig, redactor: Redactor) -> None:
        super().__init__(spec, profile, cfg.base_url, redactor)
        self._cfg = cfg
        key = cfg.api_key.get_secret_value() if cfg.api_key else None
        self._clients: PerLoop[anthropic.AsyncAnthropic] = PerLoop(
            lambda: anthropic.AsyncAnthropic(api_key=key, base_url=cfg.base_url, max_retries=0,
                                             timeout=cfg.timeout_s),
            lambda c: c.close())

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def _complete_once(self, req: ChatRequest) -> Completion:
        for _ in range(len(_SAMPLING) + 1):
            kwargs = anthropic_request(req, model=self.spec.model, drop=self.dropped)
            start = time.perf_counter()
            try:
                raw = await self._clients.get().messages.with_raw_response.create(**kwargs)
                body = await raw.read()
            except anthropic.APIError as e:
                status, payload = sdk_error_payload(e)
                sent = tuple(kwargs.get("extra_body", {}))
                # sent, not merely new: a call in flight may have learned the rejection first
                rejected = [p for p in rejected_sampling_params(status, payload) if p in sent]
                if rejected:
                    self.dropped = (*self.dropped, *(p for p in rejected if p not in self.dropped))
                    continue
                fail = failure_from_sdk_exception(e, redact=self.redact, hint=f"check {self._cfg.key_hint}",
                                                  timeout_s=self._cfg.timeout_s)
                if fail is None:
                    raise
                raise ProviderError(fail) from None
            return self._read(raw.status_code, raw.headers, body, req, time.perf_counter() - start)
        raise ProviderError(failure("bad_request", "request rejected after dropping temperature and top_p",
                                    redact=self.redact))

    def _read(self, status: int, headers: Any, body: bytes, req: ChatRequest, latency_s: float) -> Completion:
        payload = success_payload(status, headers, body, result_key="content", redact=self.redact,
                                  hint=f"check {self._cfg.key_hint}")
        try:
            return completion_from_anthropic(payload, logprobs_requested=req.logprobs, latency_s=latency_s,
                                             dropped=self.dropped)
        except MalformedPayload as e:
            raise ProviderError(failure("malformed", f"HTTP {status}: {e}", redact=self.redact,
                                        status_code=status)) from None
