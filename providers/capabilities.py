"""What a model actually gives back, found with one cheap request and cached per connection.

``probe_capabilities(provider)`` sends one short request asking for logprobs (top-k up to 5), n = 2
where the host supports ``n``, and a non-default temperature; it reports what came back. A request
rejected as a bad request is tried once more with n = 1 (the likeliest culprit). Reports without an
error are cached in memory and in a JSON file (``$PROBE_CACHE_DIR`` or ``~/.cache/probe``), keyed by a
versioned hash of the connection key (provider, base URL without credentials, model); never the API key.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probe.completion import ChatRequest, Completion, Message, ProviderError
from probe.hashing import versioned_hash
from providers.base import Provider
from providers.redact import public_url

CACHE_VERSION = "cap1"
DEFAULT_MAX_AGE_S = 7 * 24 * 3600.0
PROBE_TOP_K = 5
PROBE_TEMPERATURE = 0.7
PROBE_PROMPT = "Answer with one letter only, A or B. Which letter comes first in the alphabet?"


class CapabilityReport(BaseModel):
    """What one cheap request with logprobs showed about a model."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(description="provider/model checked.")
    base_url: str = Field(description="Base URL called (credentials and query stripped).")
    checked_at: datetime = Field(description="When the check ran (UTC).")
    logprobs: bool = Field(description="Whether token logprobs came back.")
    logprob_state: str | None = Field(default=None, description="available | partial | unavailable.")
    logprob_reason: str | None = Field(default=None, description="Why logprobs are missing or partial.")
    top_k_requested: int | None = Field(default=None, description="Alternatives per position asked for.")
    top_k_returned: int | None = Field(default=None, description="Alternatives at the first position.")
    top_k_honoured: bool | None = Field(default=None, description="Whether as many alternatives came back.")
    n_requested: int = Field(default=1, description="Choices asked for in one call.")
    n_returned: int | None = Field(default=None, description="Choices that came back.")
    n_supported: bool | None = Field(default=None, description="Whether one call returns n > 1 choices.")
    temperature_accepted: bool | None = Field(default=None, description="Whether a non-default temperature passed.")
    dropped_params: tuple[str, ...] = Field(default=(), description="Parameters the model rejected.")
    model_reported: str | None = Field(default=None, description="Model id the API reported.")
    requests: int = Field(default=0, description="Requests the check made.")
    notes: tuple[str, ...] = Field(default=(), description="Anything else worth knowing.")
    error: str | None = Field(default=None, description="Redacted failure, if the check failed.")
    error_kind: str | None = Field(default=None, description="CallFailure kind, if the check failed.")


def cache_key(provider: Provider) -> str:
    return versioned_hash({"provider": provider.name, "base_url": public_url(provider.base_url),
                           "model": provider.spec.model}, tag=CACHE_VERSION)


def default_cache_path() -> Path:
    root = os.environ.get("PROBE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "probe")
    return Path(root) / "capabilities.json"


class CapabilityCache:
    """A small JSON file of reports keyed by ``cache_key``; unreadable files count as empty."""

    def __init__(self, path: Path | None = None, max_age_s: float = DEFAULT_MAX_AGE_S) -> None:
        self.path = path or default_cache_path()
        self.max_age_s = max_age_s

    def _load(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> CapabilityReport | None:
        raw = self._load().get(key)
        if raw is None:
            return None
        try:
            report = CapabilityReport.model_validate(raw)
        except ValidationError:
            return None
        age = (datetime.now(UTC) - report.checked_at).total_seconds()
        return report if age <= self.max_age_s else None

    def put(self, key: str, report: CapabilityReport) -> None:
        data = self._load()
        data[key] = report.model_dump(mode="json")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


_MEMO: dict[tuple[str, str], CapabilityReport] = {}


def probe_request(provider: Provider, n: int) -> ChatRequest:
    caps = provider.capabilities
    k = min(PROBE_TOP_K, caps.max_top_logprobs) if caps.logprobs else None
    return ChatRequest(messages=(Message(role="user", content=PROBE_PROMPT),), max_tokens=1,
                       temperature=PROBE_TEMPERATURE, logprobs=True, top_logprobs=k, n=n)


def report_from(provider: Provider, result: Completion, req: ChatRequest, requests: int,
                notes: list[str]) -> CapabilityReport:
    """Read a probe completion into a report (pure)."""
    first = result.first
    top_returned = len(first.tokens[0].top) if first.tokens else None
    k = result.top_k_requested
    n_returned = len(result.choices)
    if req.n > 1:
        n_supported: bool | None = n_returned >= req.n
        if not n_supported:
            notes.append(f"asked for n={req.n}, got {n_returned} choice(s): the host ignores n")
    else:
        n_supported = False if not provider.capabilities.supports_n else None
    if not provider.capabilities.supports_n:
        notes.append("no n on this API: n > 1 is sent as separate calls")
    return CapabilityReport(
        model=provider.spec.name, base_url=public_url(provider.base_url), checked_at=datetime.now(UTC),
        logprobs=first.logprob_state != "unavailable", logprob_state=first.logprob_state,
        logprob_reason=first.logprob_reason, top_k_requested=k, top_k_returned=top_returned,
        top_k_honoured=None if not k or top_returned is None else top_returned >= k,
        n_requested=req.n, n_returned=n_returned, n_supported=n_supported,
        temperature_accepted="temperature" not in result.dropped_params,
        dropped_params=result.dropped_params, model_reported=result.model_reported, requests=requests,
        notes=tuple(notes),
    )


async def check_capabilities(provider: Provider) -> CapabilityReport:
    """Run the check (no cache): one request, a second with n = 1 if the first is a bad request."""
    n = 2 if provider.capabilities.supports_n else 1
    notes: list[str] = []
    requests = 0
    n_rejected = False
    while True:
        req = probe_request(provider, n)
        requests += 1
        try:
            result = await provider.complete(req)
        except ProviderError as e:
            if e.kind == "bad_request" and n > 1:
                notes.append(f"n={n} rejected: {e.failure.message}")
                n, n_rejected = 1, True
                continue
            return CapabilityReport(
                model=provider.spec.name, base_url=public_url(provider.base_url), checked_at=datetime.now(UTC),
                logprobs=False, requests=requests, notes=tuple(notes), error=e.failure.message,
                error_kind=e.kind,
            )
        report = report_from(provider, result, req, requests, notes)
        return report.model_copy(update={"n_supported": False}) if n_rejected else report


async def probe_capabilities(provider: Provider, *, cache: CapabilityCache | None = None,
                             refresh: bool = False) -> CapabilityReport:
    """The capability report of ``provider``'s model, from memory, the cache file, or one check.

    A coroutine: ``await probe_capabilities(provider)``. Failed checks are returned but not cached.
    """
    cache = cache or CapabilityCache()
    key = cache_key(provider)
    memo_key = (str(cache.path), key)
    if not refresh:
        if memo_key in _MEMO:
            return _MEMO[memo_key]
        cached = cache.get(key)
        if cached is not None:
            _MEMO[memo_key] = cached
            return cached
    started = time.perf_counter()
    report = await check_capabilities(provider)
    if report.error is None:
        report = report.model_copy(update={"notes": (*report.notes,
                                                     f"checked in {time.perf_counter() - started:.2f}s")})
        _MEMO[memo_key] = report
        with contextlib.suppress(OSError):  # a read-only home still gets the in-memory cache
            cache.put(key, report)
    return report


def clear_memo() -> None:
    """Forget in-memory reports (tests, `--refresh`)."""
    _MEMO.clear()
