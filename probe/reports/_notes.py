"""Plain-language text for statuses: why a source has no diagram, what a group's failures were."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

REASONS: dict[str, str] = {
    "provider_has_none": "provider has no logprobs",
    "model_refused": "the model refused to return logprobs",
    "endpoint_dropped": "the endpoint dropped the logprobs it was asked for",
    "not_requested": "logprobs were not requested",
    "no_top_logprobs": "no top-k alternatives were returned",
    "partial_logprobs": "logprobs were partial",
    "unknown": "the reason was not reported",
}


def reason_text(status: str) -> str:
    """'unavailable:provider_has_none' → 'provider has no logprobs'; other statuses as written."""
    if status.startswith("unavailable:"):
        reason = status.split(":", 1)[1]
        return REASONS.get(reason, reason.replace("_", " "))
    return status


def no_scores_note(source: str, status_counts: Mapping[str, int]) -> str:
    """Why a (model, source) has no scored record, e.g. 'token: unavailable — provider has no logprobs'."""
    bad = {k: v for k, v in status_counts.items() if k != "ok"}
    if not bad:
        return f"{source}: no records"
    if all(k.startswith("unavailable:") for k in bad):
        reasons = sorted({reason_text(k) for k in bad})
        return f"{source}: unavailable — {'; '.join(reasons)}"
    parts = ", ".join(f"{v} {reason_text(k)}" for k, v in sorted(bad.items(), key=lambda kv: -kv[1]))
    return f"{source}: no scored records — {parts}"


def partial_note(n: int, status_counts: Mapping[str, int]) -> str | None:
    """For a diagram whose group lost some records: 'not scored: 12 of 200 (…)'."""
    bad = {k: v for k, v in status_counts.items() if k != "ok"}
    if not bad:
        return None
    parts = ", ".join(f"{reason_text(k)} × {v}" for k, v in sorted(bad.items(), key=lambda kv: -kv[1]))
    return f"not scored: {sum(bad.values())} of {n} records ({parts})"


def anchor(*parts: str) -> str:
    """A stable, HTML-safe element id for a (model, source, …) tuple."""
    text = "\0".join(parts)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(parts)).strip("-").lower()[:60]
    return f"d-{slug}-{zlib.crc32(text.encode()):08x}"
