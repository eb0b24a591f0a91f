"""Tokens and their logprobs as a BPE-style model would show them (pure).

The tokenizer is a stand-in with a real tokenizer's visible habits: a word carries its leading
space (``" Paris"``), long words split into pieces of at most six letters, digits come in groups
of at most three, punctuation and newlines are tokens of their own.

At an option label the reported probability of each label is split over surface forms, and a
little mass sits on tokens that are no label at all, so a client must merge the forms and
renormalize over the options to get the reported distribution back exactly:

    label form   answer position   after "Answer:"
    main         "A"   92 %        " A"  92 %
    spaced/bare  " A"   6 %        "A"    6 %
    parenthesis  "(A"   2 %        " (A"  2 %

plus ε ∈ [0.5 %, 4 %] (per item) on "The", "Answer" and "**".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

_TOKEN = re.compile(r" ?[A-Za-z]{1,6}| ?\d{1,3}|\n|\s+|[^\sA-Za-z\d]")
LABEL_FORMS: dict[str, tuple[tuple[str, float], ...]] = {
    "": (("{}", 0.92), (" {}", 0.06), ("({}", 0.02)),
    " ": ((" {}", 0.92), ("{}", 0.06), (" ({}", 0.02)),
}
NON_LABEL = (("The", 0.5), ("Answer", 0.3), ("**", 0.2))
FIXED_PROB = 0.995
_FIXED_ALTS = ("\n", " ", ".", " the")
_SPAN_ALTS = (".", "\n", " (")


@dataclass(frozen=True, slots=True)
class Token:
    """One generated token: its text, logprob and the alternatives (most likely first, itself
    included)."""

    text: str
    logprob: float
    top: tuple[tuple[str, float], ...]


def tokenize(text: str) -> list[str]:
    """Split text into tokens whose concatenation is the text."""
    return _TOKEN.findall(text)


def non_label_mass(eps_draw: float) -> float:
    """ε, the mass on non-label tokens at an option position, from a uniform draw."""
    return 0.005 + 0.035 * eps_draw


def label_distribution(label_probs: Sequence[tuple[str, float]], lead: str,
                       eps: float) -> tuple[tuple[str, float], ...]:
    """Token probabilities at a label position: each label's probability split over its surface
    forms (scaled by 1 − ε), ε over non-label tokens; most likely first."""
    mass: dict[str, float] = {}
    for label, prob in label_probs:
        for form, share in LABEL_FORMS[lead]:
            tok = form.format(label)
            mass[tok] = mass.get(tok, 0.0) + prob * share * (1.0 - eps)
    for tok, share in NON_LABEL:
        tok = lead + tok if lead else tok
        mass[tok] = mass.get(tok, 0.0) + eps * share
    return tuple(sorted(mass.items(), key=lambda kv: -kv[1]))


def main_form(label: str, lead: str) -> str:
    return LABEL_FORMS[lead][0][0].format(label)


def label_token(label: str, lead: str, dist: tuple[tuple[str, float], ...]) -> Token:
    """The token for ``label`` (its main form) with the whole distribution as alternatives."""
    tok = main_form(label, lead)
    prob = next(p for t, p in dist if t == tok)
    return Token(text=tok, logprob=_log(prob), top=tuple((t, _log(p)) for t, p in dist))


def span_tokens(text: str, prob: float, first_alternatives: Sequence[tuple[str, float]]) -> list[Token]:
    """An answer span whose every token has probability ``prob`` (so the mean token probability
    is ``prob`` and the joint probability ``prob ** len``). At the first token the alternatives are
    the first tokens of the other candidate answers with their masses, each capped at ``prob``."""
    toks = tokenize(text)
    out: list[Token] = []
    for i, tok in enumerate(toks):
        alts: dict[str, float] = {}
        if i == 0:
            for alt_text, mass in first_alternatives:
                first = tokenize(alt_text)[:1]
                if first and first[0] != tok:
                    alts[first[0]] = min(prob, alts.get(first[0], 0.0) + mass)
        else:
            rest = (1.0 - prob) / len(_SPAN_ALTS)
            for alt in _SPAN_ALTS:
                if alt != tok:
                    alts[alt] = min(prob, rest)
        top = [(tok, prob), *sorted(alts.items(), key=lambda kv: -kv[1])]
        out.append(Token(text=tok, logprob=_log(prob), top=tuple((t, _log(p)) for t, p in top if p > 0)))
    return out


@lru_cache(maxsize=4096)
def fixed_tokens(text: str) -> tuple[Token, ...]:
    """Tokens of text the model is all but sure of (format scaffolding, canned replies)."""
    out = []
    for tok in tokenize(text):
        alts = [a for a in _FIXED_ALTS if a != tok][:2]
        rest = (1.0 - FIXED_PROB) / len(alts)
        top = ((tok, _log(FIXED_PROB)), *((a, _log(rest)) for a in alts))
        out.append(Token(text=tok, logprob=_log(FIXED_PROB), top=top))
    return tuple(out)


def _log(p: float) -> float:
    return math.log(p) if p > 0 else -9999.0
