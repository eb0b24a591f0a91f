"""Fault injection and added latency: what to break, how often, decided per request count (pure).

Kinds (``--fault KIND=RATE,…`` or the request header ``X-Sim-Fault: KIND``):

==============  ==========================================================================
429             rate limited: 429 with ``retry-after`` / ``retry-after-ms`` and a rate-limit body
quota           quota exhausted: 429 ``insufficient_quota`` (OpenAI) / billing error, no retry-after
401             authentication error
500             internal server error
503             overloaded (OpenAI's "The engine is currently overloaded")
529             overloaded (Anthropic's ``overloaded_error``)
hang            no response until the client gives up (or ``hang_s`` passes, then a normal one)
malformed       200 with a body that is not valid JSON (the response cut at two thirds)
truncated       200 whose connection closes half-way through the announced content-length
drop_logprobs   200 with ``logprobs: null`` although logprobs were asked for
==============  ==========================================================================

Aliases: rate_limit=429, auth=401, server_error=500, unavailable=503, overloaded=529,
timeout=hang, no_logprobs=drop_logprobs. The header value ``none`` forces a clean response.
Request number n (counted from 0 on the server, or since the last stats reset) draws
``uniform(fault_seed, "fault", n)`` against the cumulative rates in the order of the table.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from probe.sim._rng import normal, uniform

FAULT_KINDS: tuple[str, ...] = (
    "429", "quota", "401", "500", "503", "529", "hang", "malformed", "truncated", "drop_logprobs",
)
FAULT_ALIASES = {
    "rate_limit": "429", "auth": "401", "server_error": "500", "unavailable": "503", "overloaded": "529",
    "timeout": "hang", "no_logprobs": "drop_logprobs", "drop-logprobs": "drop_logprobs",
}
NO_FAULT = "none"


class FaultSpecError(ValueError):
    """A fault or latency specification that cannot be read."""


def fault_kind(name: str) -> str:
    """Canonical fault kind of a name or alias; raises FaultSpecError for unknown names."""
    key = name.strip().lower()
    key = FAULT_ALIASES.get(key, key)
    if key not in FAULT_KINDS:
        known = ", ".join(FAULT_KINDS)
        raise FaultSpecError(f"unknown fault kind {name.strip()!r} (known: {known}; or an alias: "
                             f"{', '.join(FAULT_ALIASES)})")
    return key


class FaultPlan(BaseModel):
    """How often each fault kind is injected."""

    model_config = ConfigDict(frozen=True)

    rates: dict[str, float] = Field(default_factory=dict, description="Fault kind → share of requests.")
    seed: int = Field(default=0, description="Seed of the per-request fault draws.")

    def draw(self, n: int) -> str | None:
        """The fault for request number ``n``, or None."""
        if not self.rates:
            return None
        u = uniform(self.seed, "fault", n)
        acc = 0.0
        for kind in FAULT_KINDS:
            acc += self.rates.get(kind, 0.0)
            if u < acc:
                return kind
        return None


def parse_faults(text: str | None, seed: int = 0) -> FaultPlan:
    """``429=0.2,500=0.05,malformed=0.02`` → FaultPlan; rates in [0, 1] summing to at most 1."""
    rates: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise FaultSpecError(f"fault {part.strip()!r}: write KIND=RATE, e.g. 429=0.2")
        kind = fault_kind(name)
        try:
            rate = float(value)
        except ValueError:
            raise FaultSpecError(f"fault {part.strip()!r}: rate {value.strip()!r} is not a number") from None
        if not 0.0 <= rate <= 1.0 or math.isnan(rate):
            raise FaultSpecError(f"fault {part.strip()!r}: rate must be between 0 and 1")
        rates[kind] = rates.get(kind, 0.0) + rate
    if math.fsum(rates.values()) > 1.0 + 1e-9:
        raise FaultSpecError(f"fault rates add up to {math.fsum(rates.values()):g}, more than 1")
    return FaultPlan(rates=rates, seed=seed)


class Latency(BaseModel):
    """Added latency per request: fixed, or log-normal with a median and a log-scale sigma."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["fixed", "lognormal"] = Field(default="fixed", description="fixed or lognormal.")
    ms: float = Field(default=0.0, ge=0, description="Fixed delay, or the median of the log-normal, in ms.")
    sigma: float = Field(default=0.0, ge=0, description="Log-normal sigma (of ln delay).")
    seed: int = Field(default=0, description="Seed of the per-request draws.")

    def seconds(self, n: int) -> float:
        """Delay for request number ``n``, seconds."""
        if self.ms <= 0:
            return 0.0
        if self.kind == "fixed" or self.sigma == 0:
            return self.ms / 1000.0
        return self.ms * math.exp(self.sigma * normal(self.seed, "latency", n)) / 1000.0


def parse_latency(text: str | None, seed: int = 0) -> Latency:
    """``50`` (fixed ms) or ``lognormal:50:0.5`` (median ms, sigma)."""
    if text is None or not text.strip():
        return Latency(seed=seed)
    parts = text.strip().split(":")
    try:
        if len(parts) == 1:
            ms = float(parts[0])
            if ms < 0 or math.isnan(ms):
                raise ValueError
            return Latency(kind="fixed", ms=ms, seed=seed)
        if len(parts) == 3 and parts[0].lower() in ("lognormal", "log-normal"):
            ms, sigma = float(parts[1]), float(parts[2])
            if ms < 0 or sigma < 0 or math.isnan(ms) or math.isnan(sigma):
                raise ValueError
            return Latency(kind="lognormal", ms=ms, sigma=sigma, seed=seed)
    except ValueError:
        pass
    raise FaultSpecError(f"latency {text.strip()!r}: write MS (e.g. 50) or lognormal:MEDIAN_MS:SIGMA "
                         "(e.g. lognormal:50:0.5), non-negative numbers")
