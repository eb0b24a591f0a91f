"""What a vendor's batch engine adapter offers the batch orchestration (probe.batch).

An adapter turns a ChatRequest into one input line with the SAME converters as a live call, submits
lines, polls the batch, streams its result lines back and reads each into a Completion or a
CallFailure, exactly as a live response of that vendor would be read. Vendor code lives in
``providers/batch_openai.py`` and ``providers/batch_anthropic.py``; the SDKs run with
``max_retries=0`` (a failed poll is simply retried by the next ``probe batch collect``).
"""

from __future__ import annotations

import abc
import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from probe.completion import CallFailure, ChatRequest, Completion, ConfigError, ErrorKind, ProviderError
from providers.base import Provider
from providers.config import ResolvedConfig, resolve_config
from providers.normalize import MalformedPayload
from providers.sdk import failure_from_sdk_exception

_T = TypeVar("_T")

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class BatchLimits(BaseModel):
    """How large one batch may be (requests and bytes of the submitted input)."""

    model_config = ConfigDict(frozen=True)

    max_requests: int = Field(ge=1, description="Requests per batch.")
    max_bytes: int = Field(ge=1, description="Bytes of input per batch (the JSONL file, or the JSON body).")


class BatchLine(BaseModel):
    """One request as the vendor's batch input carries it, and what reading its result needs."""

    model_config = ConfigDict(frozen=True)

    custom_id: str = Field(description="Join key of the result line (^[a-zA-Z0-9_-]{1,64}$).")
    payload: dict[str, Any] = Field(description="The vendor's input entry for this request.")
    meta: dict[str, Any] = Field(description="What the result reader needs: logprob ask, parameters sent.")
    size: int = Field(ge=1, description="Bytes this entry adds to the batch input.")


class BatchInfo(BaseModel):
    """A batch as the vendor last reported it."""

    model_config = ConfigDict(frozen=True)

    batch_id: str = Field(description="The vendor's batch id.")
    vendor_status: str = Field(description="The vendor's own status word.")
    ended: bool = Field(description="Whether the vendor will process nothing more (results can be fetched).")
    counts: dict[str, int] = Field(default_factory=dict, description="The vendor's request counts.")
    missing_kind: ErrorKind = Field(
        default="malformed", description="Failure kind of a request with no result line once the batch ended."
    )
    detail: str | None = Field(default=None, description="Batch-level errors, if any (redacted).")
    data: dict[str, Any] = Field(default_factory=dict, description="Vendor fields needed to fetch results.")


class LineOutcome(BaseModel):
    """One result line read back: a Completion, a CallFailure, or something to learn and resubmit."""

    model_config = ConfigDict(frozen=True)

    custom_id: str = Field(description="The line's custom_id.")
    completion: Completion | None = Field(default=None, description="The answer, read as a live one would be.")
    failure: CallFailure | None = Field(default=None, description="Why the line failed.")
    logprobs_refused: bool = Field(
        default=False, description="The model refused logprobs: resubmit without them (as a live call re-sends).")
    rejected_params: tuple[str, ...] = Field(
        default=(), description="Sampling parameters the model rejected: resubmit without them.")

    @property
    def relearn(self) -> bool:
        return self.logprobs_refused or bool(self.rejected_params)


class BatchVendor(abc.ABC):
    """One model's batch engine. ``provider`` is the live adapter of the same model (its profile,
    wire model name, redactor and connection key are shared, so cache keys match live calls)."""

    vendor: str
    limits: BatchLimits
    sdk_error: ClassVar[type[Exception]]  # the SDK's API error base class

    def __init__(self, provider: Provider, cfg: ResolvedConfig) -> None:
        self.provider = provider
        self.cfg = cfg
        self.redact = provider.redact

    def provider_error(self, exc: Exception) -> Exception:
        """The classified ProviderError for an SDK exception (the exception itself if it is not one)."""
        fail = failure_from_sdk_exception(exc, redact=self.redact, hint=f"check {self.cfg.key_hint}",
                                          timeout_s=self.cfg.timeout_s)
        return exc if fail is None else ProviderError(fail)

    async def _guard(self, call: Awaitable[_T]) -> _T:
        """Await an SDK call; its API errors become classified ProviderErrors."""
        try:
            return await call
        except self.sdk_error as e:
            raise self.provider_error(e) from None

    @abc.abstractmethod
    def build_line(self, custom_id: str, req: ChatRequest, *, logprobs_refused: bool,
                   dropped: tuple[str, ...]) -> BatchLine:
        """The input entry for ``req`` (the live converters, with what was learned so far)."""

    def envelope_bytes(self) -> int:
        """Bytes the batch input adds beyond its entries."""
        return 0

    @abc.abstractmethod
    async def submit(self, lines: Sequence[BatchLine], *, metadata: Mapping[str, str]) -> BatchInfo:
        """Create one batch of ``lines``; raises ProviderError."""

    @abc.abstractmethod
    async def retrieve(self, batch_id: str) -> BatchInfo:
        """The batch's current state; raises ProviderError."""

    @abc.abstractmethod
    def result_lines(self, info: BatchInfo) -> AsyncIterator[str]:
        """Every result line of an ended batch (any order), streamed; raises ProviderError."""

    def parse_line(self, raw: str) -> tuple[str, Any]:
        """(custom_id, parsed line); raises MalformedPayload for a line that is not a result line.
        Both vendors' result lines are JSON objects carrying ``custom_id``."""
        try:
            line = json.loads(raw)
        except ValueError:
            raise MalformedPayload("result line is not JSON") from None
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str):
            raise MalformedPayload("result line has no custom_id")
        return custom_id, line

    @abc.abstractmethod
    def read_line(self, custom_id: str, line: Any, meta: Mapping[str, Any]) -> LineOutcome:
        """A parsed result line → outcome, read with the request's ``meta`` from ``build_line``."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release connections."""


BATCH_PROVIDERS = ("openai", "anthropic")


def has_batch_engine(provider_name: str) -> bool:
    """Whether probe can send this provider's requests through a vendor batch engine."""
    return provider_name in BATCH_PROVIDERS


def open_batch_vendor(provider: Provider, env: Mapping[str, str] | None = None) -> BatchVendor:
    """The batch adapter for a live provider; ConfigError for a provider without a batch engine."""
    if not has_batch_engine(provider.profile.name):
        raise ConfigError(
            f"{provider.spec.name}: provider {provider.profile.name!r} has no batch engine in probe "
            f"(batch mode works with {' and '.join(p + '/…' for p in BATCH_PROVIDERS)} models)"
        )
    cfg = resolve_config(provider.spec, provider.profile, os.environ if env is None else env)
    if provider.profile.name == "openai":
        from providers.batch_openai import OpenAIBatchVendor

        return OpenAIBatchVendor(provider, cfg)
    from providers.batch_anthropic import AnthropicBatchVendor

    return AnthropicBatchVendor(provider, cfg)
