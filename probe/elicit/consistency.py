"""``consistency`` source: the majority answer over K samples and the share that agrees with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from probe.elicit._result import Extracted
from probe.record import ConfidenceDetail

UNPARSABLE = "\x00unparsable"


def consistency(keys: Sequence[str | None], display: Sequence[str]) -> Extracted:
    """``keys`` are normalized sample answers (None when a sample did not parse; it then agrees
    with nothing). The answer is the most common key (first seen wins a tie)."""
    if not keys:
        return Extracted(status="parse_error")
    norm = [k if k is not None else f"{UNPARSABLE}{i}" for i, k in enumerate(keys)]
    counts = Counter(norm)
    best = max(counts.values())
    winner = next(k for k in norm if counts[k] == best)
    if winner.startswith(UNPARSABLE):
        return Extracted(status="parse_error", detail=ConfidenceDetail(samples=len(keys), agreeing=0))
    first = norm.index(winner)
    return Extracted(status="ok", answer=display[first], confidence=best / len(keys),
                     detail=ConfidenceDetail(samples=len(keys), agreeing=best))
