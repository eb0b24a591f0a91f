"""Counts of the requests the simulator served, so tests can assert how many calls a client made."""

from __future__ import annotations

from collections import Counter
from typing import Any


class Stats:
    """Request counters by endpoint, persona, outcome (ok, a fault kind, bad_request, …),
    elicitation, and the number of choices generated. Single event loop: no locking needed."""

    def __init__(self) -> None:
        self.requests = 0
        self.choices = 0
        self.by_endpoint: Counter[str] = Counter()
        self.by_persona: Counter[str] = Counter()
        self.by_outcome: Counter[str] = Counter()
        self.by_elicitation: Counter[str] = Counter()
        self.by_persona_outcome: Counter[str] = Counter()

    def count(self, endpoint: str, persona: str | None, outcome: str, elicitation: str | None = None) -> None:
        self.requests += 1
        self.by_endpoint[endpoint] += 1
        self.by_outcome[outcome] += 1
        if persona is not None:
            self.by_persona[persona] += 1
            self.by_persona_outcome[f"{persona}:{outcome}"] += 1
        if elicitation is not None:
            self.by_elicitation[elicitation] += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "choices": self.choices,
            "by_endpoint": dict(self.by_endpoint),
            "by_persona": dict(self.by_persona),
            "by_outcome": dict(self.by_outcome),
            "by_elicitation": dict(self.by_elicitation),
            "by_persona_outcome": dict(self.by_persona_outcome),
        }
