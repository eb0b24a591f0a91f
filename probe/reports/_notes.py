"""Plain-language text for statuses: why a source has no diagram, what a group's failures were."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

REASONS: dict[str, str] = {
    "provider_has_none": "provider has no logprobs",
    "model_refused": "model refused logprobs",
    "endpoint_dropped": "endpoint returned no logprobs",
    "not_requested": "logprobs not requested",
    "no_top_logprobs": "no top-k alternatives returned",
    "partial_logprobs": "partial logprobs",
    "unknown": "reason not reported",
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


def collapse_warnings(warnings: list[str], show: int = 3) -> list[str]:
    """Merge 'group: message' warnings that share a message into one line naming the groups."""
    by_message: dict[str, list[str]] = {}
    for w in warnings:
        group, sep, message = w.partition(": ")
        key = message if sep and " / " in group else w
        by_message.setdefault(key, []).append(group if sep and " / " in group else "")
    out: list[str] = []
    for message, groups in by_message.items():
        named = [g for g in groups if g]
        if len(named) <= 1:
            out.append(f"{named[0]}: {message}" if named else message)
            continue
        listed = ", ".join(named[:show]) + (f" and {len(named) - show} more" if len(named) > show else "")
        out.append(f"{len(named)} groups ({listed}): {message}")
    return out
