"""``verbal`` source: parse 'Answer: …' and 'Confidence: …' (numeric or a hedge expression)."""

from __future__ import annotations

import re

from probe.elicit._result import Extracted
from probe.prompts import HEDGES, VerbalForm
from probe.record import ConfidenceDetail

_ANSWER = re.compile(r"^\s*\**\s*answer\s*\**\s*[:：]\s*\**\s*(.+?)\s*\**\s*$", re.IGNORECASE | re.MULTILINE)
_CONF_LINE = re.compile(r"confidence\s*\**\s*[:：]\s*\**\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_NUMBER = re.compile(r"^(\d{1,3}(?:\.\d+)?)\s*(%|percent)?(?:\s*\**)?[.\s]*$", re.IGNORECASE)
_HEDGES_LONGEST_FIRST = sorted(HEDGES, key=len, reverse=True)


def parse_numeric(text: str) -> float | None:
    """0–100 % or 0–1, explicitly: '85%', '85', '0.85' → 0.85; '1' → 0.01; out of range → None.

    The template asks for a number from 0 to 100, so a bare integer is a percentage; a decimal
    fraction at most 1 (e.g. '0.85', '1.0') is read as a probability.
    """
    m = _NUMBER.match(text.strip())
    if not m:
        return None
    raw, percent = m.group(1), m.group(2)
    value = float(raw)
    if not percent and "." in raw and value <= 1.0:
        return value
    return value / 100.0 if value <= 100.0 else None


def parse_linguistic(text: str) -> tuple[float, str] | None:
    """The longest hedge expression found in the text and its fixed number."""
    low = " ".join(text.lower().split())
    for hedge in _HEDGES_LONGEST_FIRST:
        if re.search(rf"\b{re.escape(hedge)}\b", low):
            return HEDGES[hedge], hedge
    return None


def verbal(text: str, form: VerbalForm) -> Extracted:
    """The stated answer and confidence; ``parse_error`` when either is missing or unreadable."""
    am = _ANSWER.search(text)
    cm = _CONF_LINE.search(text)
    answer = am.group(1).strip() if am else None
    raw = cm.group(1).strip() if cm else None
    if answer is None or raw is None:
        return Extracted(status="parse_error", answer=answer, detail=ConfidenceDetail(raw_confidence=raw))
    if form == "numeric":
        value = parse_numeric(raw)
    else:
        found = parse_linguistic(raw)
        value = found[0] if found else None
    if value is None:
        return Extracted(status="parse_error", answer=answer, detail=ConfidenceDetail(raw_confidence=raw))
    return Extracted(status="ok", answer=answer, confidence=value, detail=ConfidenceDetail(raw_confidence=raw))
