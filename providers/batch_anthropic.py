"""Anthropic Message Batches (``/v1/messages/batches``) through the official SDK (``max_retries=0``).

Each request's ``params`` are the live call's ``messages.create`` arguments from ``anthropic_request``
(its ``extra_body`` sampling fields merged in, as they reach the wire); a ``succeeded`` result's
``message`` is read by ``completion_from_anthropic`` like a live body. ``errored`` results carry the
API's error body (classified like a live error of the same type), ``expired`` / ``canceled`` ones
become those failure kinds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar, cast

import anthropic
import httpx2

from probe.completion import ChatRequest, ProviderError
from providers.anthropic_messages import anthropic_request, completion_from_anthropic
from providers.base import Provider
from providers.batch_base import BatchInfo, BatchLimits, BatchLine, BatchVendor, LineOutcome
from providers.config import ResolvedConfig
from providers.errors import (
    Redact,
    classify_http_error,
    error_fields,
    error_object,
    failure,
    rejected_sampling_params,
)
from providers.normalize import MalformedPayload

# "100,000 Message requests or 256 MB in size, whichever is reached first" (decimal MB: the safe reading)
ANTHROPIC_LIMITS = BatchLimits(max_requests=100_000, max_bytes=256_000_000)
_ENVELOPE = len(b'{"requests":[]}')
# HTTP status each error type is returned with by the Messages API (docs.claude.com/en/api/errors)
ERROR_STATUS = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "timeout_error": 504, "overloaded_error": 529,
}
_T = TypeVar("_T")


def encode_request(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def read_anthropic_line(custom_id: str, line: Any, meta: Mapping[str, Any], *, redact: Redact,
                        hint: str = "") -> LineOutcome:
    """A ``MessageBatchIndividualResponse`` line → outcome (pure)."""
    if not isinstance(line, dict) or not isinstance(line.get("result"), dict):
        raise MalformedPayload("result line has no result object")
    result = line["result"]
    rtype = result.get("type")
    dropped = tuple(meta.get("dropped", ()))
    if rtype == "succeeded":
        try:
            completion = completion_from_anthropic(result.get("message"), latency_s=0.0, dropped=dropped,
                                                   logprobs_requested=bool(meta.get("logprobs_requested")))
        except MalformedPayload as e:
            return LineOutcome(custom_id=custom_id, failure=failure("malformed", str(e), redact=redact))
        return LineOutcome(custom_id=custom_id, completion=completion)
    if rtype == "errored":
        body = result.get("error")
        message, etype, _code, _param = error_fields(error_object(body))
        status = ERROR_STATUS.get(etype, 500)
        sent = [p for p in meta.get("params", ()) if p not in dropped]
        new = tuple(p for p in rejected_sampling_params(status, body) if p in sent)
        if new:
            return LineOutcome(custom_id=custom_id, rejected_params=new)
        classified = classify_http_error(status, {}, json.dumps(body).encode(), redact=redact, hint=hint)
        return LineOutcome(custom_id=custom_id, failure=failure(
            classified.kind, f"batch line errored [{etype or 'error'}]: {message or 'no message'}"
            + (f" ({hint})" if classified.kind == "auth" and hint else ""), redact=redact))
    if rtype == "expired":
        return LineOutcome(custom_id=custom_id, failure=failure(
            "expired", "batch line expired: the batch ended (24 h) before this request ran", redact=redact))
    if rtype == "canceled":
        return LineOutcome(custom_id=custom_id, failure=failure(
            "canceled", "batch line canceled: the batch was canceled before this request ran", redact=redact))
    raise MalformedPayload(f"unknown result type {rtype!r}")


class AnthropicBatchVendor(BatchVendor):
    """``anthropic.AsyncAnthropic(max_retries=0)``: messages.batches.create → retrieve → results (streamed)."""

    vendor = "anthropic"
    sdk_error = anthropic.APIError
    limits = ANTHROPIC_LIMITS

    def __init__(self, provider: Provider, cfg: ResolvedConfig) -> None:
        super().__init__(provider, cfg)
        self._client = anthropic.AsyncAnthropic(
            api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
            base_url=provider.base_url, max_retries=0, timeout=cfg.timeout_s,
        )

    async def aclose(self) -> None:
        await self._client.close()

    def build_line(self, custom_id: str, req: ChatRequest, *, logprobs_refused: bool,
                   dropped: tuple[str, ...]) -> BatchLine:
        kwargs = anthropic_request(req, model=self.provider.spec.model, drop=dropped)
        extra = kwargs.pop("extra_body", {})
        params = {**kwargs, **extra}
        payload = {"custom_id": custom_id, "params": params}
        meta = {"logprobs_requested": req.logprobs, "params": sorted(extra), "dropped": list(dropped)}
        return BatchLine(custom_id=custom_id, payload=payload, meta=meta, size=len(encode_request(payload)) + 1)

    def envelope_bytes(self) -> int:
        return _ENVELOPE

    def _info(self, batch: Any) -> BatchInfo:
        counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
        status = str(batch.processing_status)
        return BatchInfo(
            batch_id=batch.id, vendor_status=status, ended=status == "ended",
            counts={k: int(v) for k, v in counts.items() if isinstance(v, int)}, missing_kind="malformed",
            data={"results_url": batch.results_url},
        )

    async def submit(self, lines: Sequence[BatchLine], *, metadata: Mapping[str, str]) -> BatchInfo:
        requests = cast(Any, [line.payload for line in lines])  # plain dicts: the wire shape, sampling included
        return self._info(await self._guard(self._client.messages.batches.create(requests=requests)))

    async def retrieve(self, batch_id: str) -> BatchInfo:
        return self._info(await self._guard(self._client.messages.batches.retrieve(batch_id)))

    async def result_lines(self, info: BatchInfo) -> AsyncIterator[str]:
        try:
            async with self._client.messages.batches.with_streaming_response.results(info.batch_id) as resp:
                async for line in resp.iter_lines():
                    yield line
        except anthropic.APIError as e:
            raise self.provider_error(e) from None
        except httpx2.HTTPError as e:
            raise ProviderError(failure("transient", f"reading results: {type(e).__name__}: {e}",
                                        redact=self.redact)) from None

    def read_line(self, custom_id: str, line: Any, meta: Mapping[str, Any]) -> LineOutcome:
        return read_anthropic_line(custom_id, line, meta, redact=self.redact, hint=f"check {self.cfg.key_hint}")
