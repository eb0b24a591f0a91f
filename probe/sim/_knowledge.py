"""What the simulator knows (the suites' answer keys) and how it reads a prompt (pure).

A prompt is recognized by probe's own templates: the elicitation by ``probe.prompts.MARKERS``
(falling back to 'Proposed answer:' / 'Confidence:' for custom templates), the question by its
text (the longest known question text the prompt starts with, up to a line end; failing that,
any known question text inside the prompt), the options by their ``<label>. <text>`` lines, and
the shown labels are mapped back to the original choices by option text, so shuffled variants
are answered consistently.

The variant *form* of a prompt is read from the prompt too (variant ids are never sent): the
system prompt that came with it (given by the caller: ``resolve(text, system)``) and, for a known
mc question, the order its options are shown in. The item's latent state is that of its form
(``probe.sim._items.form_shift``), which is what ``probe sim truth`` states per variant.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import blake2b
from typing import Literal

from probe.grading import normalize_answer, parse_label
from probe.prompts import HEDGES, MARKERS
from probe.sim._items import (
    ItemState,
    guess_mc_state,
    guess_short_state,
    mc_state,
    normal_order,
    normal_system,
    short_state,
)
from probe.suite import DEFAULT_LABELS, PromptVariant, Question, Suite

Elicitation = Literal["answer", "ptrue", "verbal_numeric", "verbal_linguistic", "other"]
ELICITATIONS: tuple[Elicitation, ...] = ("answer", "ptrue", "verbal_numeric", "verbal_linguistic", "other")
_OPTION = re.compile(r"^\(?([A-Za-z0-9]{1,3})[.)]\s+(.+?)\s*$")
_PROPOSED = "\nProposed answer: "
_QUESTION_PREFIX = "Question: "
_HEDGE_LIST = ", ".join(HEDGES)
MAX_RESOLVED = 200_000


@dataclass(frozen=True, slots=True)
class Resolved:
    """A prompt as the simulator understood it."""

    elicitation: Elicitation
    state: ItemState | None  # None only for 'other'
    labels: tuple[str, ...]  # mc: shown label of each candidate (by candidate index)
    proposed: int | None  # ptrue: candidate index of the proposed answer, if it matches one
    text_key: str  # hash of the prompt text (stream key for repeated identical prompts)


@dataclass(frozen=True, slots=True)
class _Ref:
    question: Question
    suite: str
    peers: tuple[str, ...]


def detect(text: str) -> Elicitation:
    """Which elicitation a prompt is: probe's markers first, then looser cues."""
    if MARKERS["ptrue"] in text:
        return "ptrue"
    if MARKERS["verbal_numeric"] in text:
        return "verbal_numeric"
    if MARKERS["verbal_linguistic"] in text:
        return "verbal_linguistic"
    if MARKERS["answer_mc"] in text or MARKERS["answer_short"] in text:
        return "answer"
    if "Proposed answer:" in text:
        return "ptrue"
    if "Confidence:" in text:
        return "verbal_linguistic" if _HEDGE_LIST in text else "verbal_numeric"
    return "other"


def parse_options(block: str) -> list[tuple[str, str]]:
    """``<label>. <text>`` (or ``(A) text`` / ``A) text``) lines, in order."""
    out = []
    for line in block.split("\n"):
        m = _OPTION.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


class Knowledge:
    """Known questions (from the suites given) and the latent state of each, built on first use."""

    def __init__(self, suites: Sequence[Suite], seed: int = 0) -> None:
        self.seed = seed
        self.suite_names = tuple(s.name for s in suites)
        self._by_text: dict[str, list[_Ref]] = {}
        self._states: dict[tuple[str, str, tuple[int, ...] | None, str | None], ItemState] = {}
        self._resolved: dict[str | tuple[str, str], Resolved] = {}
        for suite in suites:
            by_subject: dict[str | None, list[str]] = {}
            for q in suite.questions:
                if q.kind == "short" and q.aliases:
                    by_subject.setdefault(q.subject, []).append(q.aliases[0])
            every = tuple(a for answers in by_subject.values() for a in answers)
            pools = {subj: tuple(v) if len(v) > 3 else every for subj, v in by_subject.items()}
            for q in suite.questions:
                ref = _Ref(question=q, suite=suite.name, peers=pools.get(q.subject, every))
                self._by_text.setdefault(q.text.strip(), []).append(ref)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self._by_text.values())

    def state(self, question: Question, suite: str = "", variant: PromptVariant | None = None) -> ItemState:
        """Latent state of a known question in the form ``variant``'s prompts have (its system
        prompt, its option order; None: the plain form). The first suite holding the same text wins
        for peers."""
        refs = self._by_text.get(question.text.strip(), [])
        ref = next((r for r in refs if r.question == question), None)
        if ref is None:
            ref = _Ref(question=question, suite=suite, peers=())
        if variant is None:
            return self._state(ref)
        order = variant.order(question) if question.kind == "mc" else None
        return self._state(ref, normal_order(order), normal_system(variant.system))

    def _state(self, ref: _Ref, order: tuple[int, ...] | None = None, system: str | None = None) -> ItemState:
        key = (ref.suite, ref.question.id, order, system)
        st = self._states.get(key)
        if st is None:
            q = ref.question
            if q.kind == "mc":
                st = mc_state(q, self.seed, order=order, system=system)
            else:
                st = short_state(q, self.seed, ref.peers, system=system)
            self._states[key] = st
        return st

    def resolve(self, text: str, system: str | None = None) -> Resolved:
        """Understand a prompt: the last user message and the system prompt sent with it (None or
        blank: none); results are cached by both."""
        system = normal_system(system)
        cache_key: str | tuple[str, str] = text if system is None else (text, system)
        hit = self._resolved.get(cache_key)
        if hit is None:
            hit = self._resolve(text, system)
            if len(self._resolved) >= MAX_RESOLVED:
                self._resolved.clear()
            self._resolved[cache_key] = hit
        return hit

    def _resolve(self, text: str, system: str | None = None) -> Resolved:
        kind = detect(text)
        text_key = blake2b(text.encode(), digest_size=8).hexdigest()
        body, proposed = text, None
        if kind == "ptrue":
            body = body.removeprefix(_QUESTION_PREFIX)
            cut = body.rfind(_PROPOSED)
            if cut >= 0:
                tail = body[cut + len(_PROPOSED):]
                proposed = tail.split("\n\n", 1)[0].strip()
                body = body[:cut]
        else:
            for marker in (MARKERS["answer_mc"], MARKERS["answer_short"], "Give your answer"):
                cut = body.find(marker)
                if cut >= 0:
                    body = body[:cut]
                    break
        refs, rest = self._find_question(body)
        if refs is None and kind == "other":
            return Resolved(elicitation="other", state=None, labels=(), proposed=None, text_key=text_key)
        if kind == "other":
            kind = "answer"
        options = parse_options(rest if refs is not None else body)
        state, labels = self._choose(refs, options, body, text_key, system)
        index = _proposed_index(state, labels, proposed) if proposed is not None else None
        return Resolved(elicitation=kind, state=state, labels=labels, proposed=index, text_key=text_key)

    def _find_question(self, body: str) -> tuple[list[_Ref] | None, str]:
        b = body.strip()
        best: str | None = None
        end = b.find("\n")
        while True:
            prefix = b[: end if end >= 0 else len(b)].strip()
            if prefix in self._by_text:
                best = prefix
            if end < 0:
                break
            end = b.find("\n", end + 1)
        if best is None:
            inside = [t for t in self._by_text if t in b]
            if not inside:
                return None, b
            best = max(inside, key=len)
            return self._by_text[best], b[b.find(best) + len(best):]
        return self._by_text[best], b[len(best):]

    def _choose(self, refs: list[_Ref] | None, options: list[tuple[str, str]], body: str,
                text_key: str, system: str | None) -> tuple[ItemState, tuple[str, ...]]:
        refs = refs or []
        if len(options) >= 2:
            shown = [t for _, t in options]
            for ref in refs:
                q = ref.question
                if q.kind == "mc" and q.choices is not None and sorted(q.choices) == sorted(shown):
                    labels = [""] * len(q.choices)
                    order = [q.choices.index(t) for t in shown]
                    for (label, _), i in zip(options, order, strict=True):
                        labels[i] = label
                    return self._state(ref, normal_order(order), system), tuple(labels)
            guess = guess_mc_state(shown, text_key, self.seed)
            return guess, tuple(label for label, _ in options)
        short = next((r for r in refs if r.question.kind == "short"), None)
        if short is not None:
            return self._state(short, None, system), ()
        mc = next((r for r in refs if r.question.kind == "mc"), None)
        if mc is not None and mc.question.choices is not None:
            return self._state(mc, None, system), DEFAULT_LABELS[: len(mc.question.choices)]
        question = body.strip().split("\n\n", 1)[0]
        return guess_short_state(question, text_key, self.seed), ()


def _proposed_index(state: ItemState, labels: tuple[str, ...], proposed: str) -> int | None:
    """Candidate index of a proposed answer: by label, option text, alias or candidate text."""
    if state.kind == "mc" and labels:
        label = parse_label(proposed, labels)
        if label is not None:
            return labels.index(label)
    norm = normalize_answer(proposed)
    if state.kind == "short" and norm in state.accepted:
        return next(i for i, c in enumerate(state.candidates) if c.correct)
    for i, cand in enumerate(state.candidates):
        if normalize_answer(cand.text) == norm:
            return i
    return None
