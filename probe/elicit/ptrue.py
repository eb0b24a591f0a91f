"""``ptrue`` source (Kadavath et al. 2022): P(True) that the model's own proposed answer is right."""

from __future__ import annotations

from probe.completion import Choice
from probe.elicit._result import Extracted
from probe.elicit.token import option_distribution
from probe.prompts import PTRUE_LABELS
from probe.record import ConfidenceDetail


def ptrue(choice: Choice, proposed: str) -> Extracted:
    """P(True) from the top-k at the A/B position, renormalized over the two labels."""
    dist = option_distribution(choice, PTRUE_LABELS)
    if isinstance(dist, str):
        return Extracted(status=dist, answer=proposed)
    mass, seen, _ = dist
    total = mass["A"] + mass["B"]
    if total <= 0:
        return Extracted(status="parse_error", answer=proposed)
    detail = ConfidenceDetail(option_mass=min(total, 1.0), outside_topk=len(seen) < 2)
    return Extracted(status="ok", answer=proposed, confidence=min(mass["A"] / total, 1.0), detail=detail)
