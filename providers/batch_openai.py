"""OpenAI Batch API (``/v1/files`` + ``/v1/batches``) for Chat Completions, through the official SDK.

Input lines are ``{custom_id, method: POST, url: /v1/chat/completions, body}`` where ``body`` is built
by ``chat_request_to_openai`` exactly as a live call's; an output line's ``response.body`` is read by
``completion_from_openai`` and an error status by ``classify_http_error``, as a live response would be.
Lines the batch never ran come back in the error file with ``error.code`` ``batch_expired`` /
``batch_cancelled`` (or not at all): they become ``expired`` / ``canceled`` failures.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final, TypeVar

import httpx2
import openai

from probe.completion import ChatRequest, ErrorKind, ProviderError
from providers.base import Provider
from providers.batch_base import BatchInfo, BatchLimits, BatchLine, BatchVendor, LineOutcome
from providers.config import ResolvedConfig
from providers.errors import (
    Redact,
    classify_http_error,
    error_object,
    failure,
    is_logprob_refusal,
    rejected_sampling_params,
)
from providers.normalize import MalformedPayload
from providers.openai_chat import LogprobAsk, chat_request_to_openai, completion_from_openai, logprob_ask

ENDPOINT: Final = "/v1/chat/completions"
# "The file can contain up to 50,000 requests, and can be up to 200 MB in size" (decimal MB: the safe reading)
OPENAI_LIMITS = BatchLimits(max_requests=50_000, max_bytes=200_000_000)
ENDED = {"completed": "malformed", "expired": "expired", "cancelled": "canceled", "failed": "bad_request"}
_SAMPLING = ("temperature", "top_p")
_T = TypeVar("_T")


def encode_line(payload: Mapping[str, Any]) -> bytes:
    """One JSONL line (with its newline)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"


def ask_to_meta(ask: LogprobAsk) -> dict[str, Any]:
    return {"requested": ask.requested, "sent": ask.sent, "top_k": ask.top_k, "trim_to": ask.trim_to,
            "reason": ask.reason_if_unsent}


def ask_from_meta(meta: Mapping[str, Any]) -> LogprobAsk:
    return LogprobAsk(requested=bool(meta.get("requested")), sent=bool(meta.get("sent")), top_k=meta.get("top_k"),
                      trim_to=meta.get("trim_to"), reason_if_unsent=str(meta.get("reason", "provider_has_none")))


def _non_http_kind(code: str) -> ErrorKind:
    if code == "batch_expired":
        return "expired"
    if code in ("batch_cancelled", "batch_canceled"):
        return "canceled"
    return "transient"


def read_openai_line(custom_id: str, line: Any, meta: Mapping[str, Any], *, redact: Redact,
                     hint: str = "") -> LineOutcome:
    """A ``BatchRequestOutput`` line → outcome (pure). ``meta`` is what ``build_line`` stored."""
    if not isinstance(line, dict):
        raise MalformedPayload("result line is not a JSON object")
    response, err = line.get("response"), line.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        body = response.get("body")
        if not isinstance(status, int):
            return LineOutcome(custom_id=custom_id, failure=failure(
                "malformed", "batch result line has no status_code", redact=redact))
        if status < 400 and not (isinstance(body, dict) and "choices" not in body and error_object(body)):
            try:
                completion = completion_from_openai(body, ask_from_meta(meta), latency_s=0.0,
                                                    dropped=tuple(meta.get("dropped", ())))
            except MalformedPayload as e:
                return LineOutcome(custom_id=custom_id, failure=failure(
                    "malformed", f"HTTP {status}: {e}", redact=redact, status_code=status))
            return LineOutcome(custom_id=custom_id, completion=completion)
        if meta.get("sent") and is_logprob_refusal(status, body):
            return LineOutcome(custom_id=custom_id, logprobs_refused=True)
        sent = [p for p in meta.get("params", ()) if p not in meta.get("dropped", ())]
        new = tuple(p for p in rejected_sampling_params(status, body) if p in sent)
        if new:
            return LineOutcome(custom_id=custom_id, rejected_params=new)
        raw = json.dumps(body).encode() if body is not None else b""
        return LineOutcome(custom_id=custom_id,
                           failure=classify_http_error(status, {}, raw, redact=redact, hint=hint))
    if isinstance(err, dict):
        code = str(err.get("code") or "")
        message = str(err.get("message") or "no message")
        kind = _non_http_kind(code)
        return LineOutcome(custom_id=custom_id, failure=failure(
            kind, f"batch line not run [{code or 'error'}]: {message}", redact=redact))
    raise MalformedPayload("result line has neither a response nor an error")


class OpenAIBatchVendor(BatchVendor):
    """``openai.AsyncOpenAI(max_retries=0)``: files.create(purpose=batch) → batches.create → retrieve →
    files.content of the output and error files, streamed line by line."""

    vendor = "openai"
    sdk_error = openai.APIError
    limits = OPENAI_LIMITS

    def __init__(self, provider: Provider, cfg: ResolvedConfig) -> None:
        super().__init__(provider, cfg)
        self._client = openai.AsyncOpenAI(
            api_key=cfg.api_key.get_secret_value() if cfg.api_key else None,
            base_url=provider.base_url, max_retries=0, timeout=cfg.timeout_s,
        )

    async def aclose(self) -> None:
        await self._client.close()

    def build_line(self, custom_id: str, req: ChatRequest, *, logprobs_refused: bool,
                   dropped: tuple[str, ...]) -> BatchLine:
        profile = self.provider.profile
        ask, top = logprob_ask(req, profile, refused=logprobs_refused)
        body = chat_request_to_openai(req, profile, model=self.provider.wire_model, top_logprobs=top, drop=dropped)
        payload = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
        meta = {**ask_to_meta(ask), "params": [p for p in _SAMPLING if p in body], "dropped": list(dropped)}
        return BatchLine(custom_id=custom_id, payload=payload, meta=meta, size=len(encode_line(payload)))

    def _info(self, batch: Any) -> BatchInfo:
        counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
        errors = [e.message or e.code or "" for e in (batch.errors.data or [])] if batch.errors else []
        status = str(batch.status)
        return BatchInfo(
            batch_id=batch.id, vendor_status=status, ended=status in ENDED,
            counts={k: int(v) for k, v in counts.items() if isinstance(v, int)},
            missing_kind=ENDED.get(status, "malformed"),
            detail=self.redact("; ".join(e for e in errors if e)[:400]) or None,
            data={"input_file_id": batch.input_file_id, "output_file_id": batch.output_file_id,
                  "error_file_id": batch.error_file_id},
        )

    async def submit(self, lines: Sequence[BatchLine], *, metadata: Mapping[str, str]) -> BatchInfo:
        data = b"".join(encode_line(line.payload) for line in lines)
        uploaded = await self._guard(self._client.files.create(
            file=("probe-batch.jsonl", data, "application/jsonl"), purpose="batch"))
        batch = await self._guard(self._client.batches.create(
            input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h", metadata=dict(metadata)))
        return self._info(batch)

    async def retrieve(self, batch_id: str) -> BatchInfo:
        return self._info(await self._guard(self._client.batches.retrieve(batch_id)))

    async def result_lines(self, info: BatchInfo) -> AsyncIterator[str]:
        for key in ("output_file_id", "error_file_id"):
            file_id = info.data.get(key)
            if not file_id:
                continue
            try:
                async with self._client.files.with_streaming_response.content(str(file_id)) as resp:
                    async for line in resp.iter_lines():
                        yield line
            except openai.APIError as e:
                raise self.provider_error(e) from None
            except httpx2.HTTPError as e:
                raise ProviderError(failure("transient", f"reading {key}: {type(e).__name__}: {e}",
                                            redact=self.redact)) from None

    def read_line(self, custom_id: str, line: Any, meta: Mapping[str, Any]) -> LineOutcome:
        return read_openai_line(custom_id, line, meta, redact=self.redact, hint=f"check {self.cfg.key_hint}")
