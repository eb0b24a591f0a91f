"""Merging the surface forms of option labels in top-k alternatives (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from probe.completion import TokenLogprob, TopLogprob

_STRIP_LEAD = " \t\n(*[\"'"
_STRIP_TRAIL = " \t\n).:*]\"',"


def surface(token: str) -> str:
    """A token's label form: ' A', '(A', 'A)', '**A', 'a' → 'A'."""
    return token.strip(_STRIP_LEAD).rstrip(_STRIP_TRAIL).strip(_STRIP_LEAD).upper()


def label_masses(
    alternatives: Sequence[TopLogprob], labels: Sequence[str]
) -> tuple[dict[str, float], set[str]]:
    """Probability per label summed over its surface forms, and the labels seen in the top-k.

    Alternatives whose logprob is a placeholder (None) count as not seen, never as 0 or 1.
    """
    wanted = {label.upper(): label for label in labels}
    mass = dict.fromkeys(labels, 0.0)
    seen: set[str] = set()
    for alt in alternatives:
        if alt.logprob is None:
            continue
        key = surface(alt.token)
        if key in wanted:
            label = wanted[key]
            mass[label] += math.exp(alt.logprob)
            seen.add(label)
    return mass, seen


def find_label_position(
    tokens: Sequence[TokenLogprob], labels: Sequence[str], window: int = 8
) -> int | None:
    """Index of the first generated token (within ``window``) that is an option label in any form."""
    wanted = {label.upper() for label in labels}
    for i, tok in enumerate(tokens[:window]):
        if surface(tok.token) in wanted:
            return i
    return None


def alternatives_with_sampled(tok: TokenLogprob) -> tuple[TopLogprob, ...]:
    """The top-k alternatives plus the sampled token itself when the list lacks it."""
    if any(alt.token == tok.token for alt in tok.top):
        return tok.top
    return (*tok.top, TopLogprob(token=tok.token, logprob=tok.logprob, bytes=tok.bytes))
