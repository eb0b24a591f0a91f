"""What a persona writes for a resolved prompt, with per-token logprobs (pure).

Which candidate it answers: at temperature 0 the greedy one; at T > 0 a draw from the persona's
reported distribution tempered by 1/T, with the uniform number
``uniform(seed, item, "sample", stream, choice_index)``. The stream is ``s<seed>`` when the
request carries a ``seed`` and ``o<k>`` for the k-th identical request otherwise, so ``n``
choices of one call, calls with different seeds, and repeated calls all vary as the
distribution says, while everything replays exactly on a fresh server.

* answer (mc): the shown label of the candidate; the token's alternatives carry the reported
  distribution over the labels (see ``probe.sim._tokens``).
* answer (short): the candidate's text; every token has the candidate's reported probability.
* ptrue: belief x in the proposed answer (the belief of the candidate it names; 0.05 when it names
  none), P(True) = persona.p_true(x); greedy 'A' when P(True) ≥ 0.5, else 'B'.
* verbal: ``Answer: <label or text>`` and ``Confidence: <persona.verbal_percent(x)>%`` (numeric)
  or the nearest hedge (linguistic), x the belief in the answer it gives.

``persona`` is the form that reports under the request's prompt (``SimRequest.speaker``: its
system-prompted form when there is a system prompt); the resolved state is that of the prompt's
variant form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from probe.prompts import PTRUE_LABELS
from probe.sim._items import tempered
from probe.sim._knowledge import Resolved
from probe.sim._personas import Persona, hedge_for
from probe.sim._rng import pick, uniform
from probe.sim._tokens import (
    Token,
    fixed_tokens,
    label_distribution,
    label_token,
    non_label_mass,
    span_tokens,
)

PTRUE_UNMATCHED = 0.05
FinishReason = Literal["stop", "length", "stop_sequence"]


@dataclass(frozen=True, slots=True)
class Generation:
    """One generated choice: text, tokens with logprobs, why it stopped."""

    text: str
    tokens: tuple[Token, ...]
    finish_reason: FinishReason
    candidate: int | None  # which candidate it answered (None for 'other')
    stop: str | None = None  # the stop sequence that ended it, if one did


def other_reply(persona: Persona) -> str:
    return (f"I am probe's simulated model '{persona.name}'. I answer the question prompts of probe's "
            "suites; ask me one of those.")


class Generator:
    """Renders generations; what depends only on (persona, prompt, candidate) is cached."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._cache: dict[tuple[str, Resolved, int, str], Generation] = {}  # (persona.key, …)

    def choose(self, persona: Persona, r: Resolved, temperature: float, stream: str, index: int) -> int:
        """Candidate (or, for ptrue, 0 = 'A' / 1 = 'B') answered by choice ``index``."""
        st = r.state
        assert st is not None
        if r.elicitation == "ptrue":
            pt = self.p_true(persona, r)
            dist = tempered((pt, 1.0 - pt), temperature, 0 if pt >= 0.5 else 1)
            return pick(dist, uniform(self.seed, st.key, "ptrue", stream, index))
        if temperature <= 0:
            return st.greedy
        return pick(st.sampling(persona, temperature), uniform(self.seed, st.key, "sample", stream, index))

    def p_true(self, persona: Persona, r: Resolved) -> float:
        st = r.state
        assert st is not None
        x = st.belief[r.proposed] if r.proposed is not None else PTRUE_UNMATCHED
        return persona.p_true(x)

    def generate(self, persona: Persona, r: Resolved, candidate: int) -> Generation:
        key = (persona.key, r, candidate, r.elicitation)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._render(persona, r, candidate)
            if len(self._cache) > 500_000:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def _render(self, persona: Persona, r: Resolved, cand: int) -> Generation:
        st = r.state
        if r.elicitation == "other" or st is None:
            text = other_reply(persona)
            return Generation(text=text, tokens=fixed_tokens(text), finish_reason="stop", candidate=None)
        eps = non_label_mass(uniform(self.seed, st.key, "eps"))
        if r.elicitation == "ptrue":
            pt = self.p_true(persona, r)
            dist = label_distribution(((PTRUE_LABELS[0], pt), (PTRUE_LABELS[1], 1.0 - pt)), "", eps)
            tok = label_token(PTRUE_LABELS[cand], "", dist)
            return Generation(text=tok.text, tokens=(tok,), finish_reason="stop", candidate=cand)
        if r.elicitation == "answer":
            toks = self._answer_tokens(persona, r, cand, "", eps)
            return Generation(text="".join(t.text for t in toks), tokens=toks, finish_reason="stop",
                              candidate=cand)
        x = st.belief[cand]
        percent = persona.verbal_percent(x, st.chance)
        if r.elicitation == "verbal_numeric":
            stated = f"{percent}%"
        else:
            stated = hedge_for(percent / 100.0, uniform(self.seed, st.key, "hedge"))
        toks = (*fixed_tokens("Answer:"), *self._answer_tokens(persona, r, cand, " ", eps),
                *fixed_tokens(f"\nConfidence: {stated}"))
        return Generation(text="".join(t.text for t in toks), tokens=toks, finish_reason="stop", candidate=cand)

    def _answer_tokens(self, persona: Persona, r: Resolved, cand: int, lead: str,
                       eps: float) -> tuple[Token, ...]:
        st = r.state
        assert st is not None
        rep = st.reported(persona)
        if st.kind == "mc":
            dist = label_distribution(tuple(zip(r.labels, rep, strict=True)), lead, eps)
            return (label_token(r.labels[cand], lead, dist),)
        alternatives = [(lead + c.text, rep[i]) for i, c in enumerate(st.candidates) if i != cand]
        return tuple(span_tokens(lead + st.candidates[cand].text, rep[cand], alternatives))


def truncate(gen: Generation, max_tokens: int | None, stops: tuple[str, ...]) -> Generation:
    """Apply a token cap and stop sequences (the stop text itself is not returned)."""
    tokens = gen.tokens
    finish: FinishReason = gen.finish_reason
    hit: str | None = None
    if stops:
        found = [(i, s) for s, i in ((s, gen.text.find(s)) for s in stops if s) if i >= 0]
        if found:
            cut, hit = min(found)
            kept: list[Token] = []
            length = 0
            for t in tokens:
                if length + len(t.text) > cut:
                    break
                kept.append(t)
                length += len(t.text)
            tokens = tuple(kept)
            finish = "stop_sequence"
    if max_tokens is not None and len(tokens) > max_tokens:
        tokens = tokens[:max_tokens]
        finish = "length"
    if tokens is gen.tokens:
        return gen
    return Generation(text="".join(t.text for t in tokens), tokens=tokens, finish_reason=finish,
                      candidate=gen.candidate, stop=hit)
