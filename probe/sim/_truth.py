"""The ground truth: for every item and confidence source, what a persona reports and the true
probability that the answer behind it is right (pure).

* token: reported option probability (mc, after merging label forms and renormalizing over the
  options) or mean token probability of the answer span (short; every token has the same
  probability, so it equals the reported probability of the answer) = f(p); true P(right) = p.
* ptrue: P(True) for its own greedy answer = persona.p_true(p); true P(right) = p.
* verbal (numeric, linguistic): the stated confidence for its greedy answer; true P(right) = p.
* consistency: K samples at temperature T from the persona's sampling distribution, the answer
  is the majority (ties: first seen), confidence = its share. Exact over all count vectors when
  there are at most 200,000 of them (a seeded Monte Carlo of 200,000 draws otherwise): the
  expected confidence, P(majority right), and per number m of agreeing samples P(m) and
  P(right | m), the truth behind a reported m/K.

Sources a persona cannot report (token and ptrue without logprobs) are ``available: false``.

Every item's truth is stated for one *variant form*: the prompts of a ``PromptVariant`` (its
system prompt, its option order), in which p is the item's latent p for that form and the
persona reports through its system-prompted form when the variant has a system prompt. Without a
variant it is the plain form (no system prompt, the suite's option order).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from probe.prompts import HEDGES
from probe.sim._items import ItemState
from probe.sim._knowledge import Knowledge
from probe.sim._personas import Persona, hedge_for
from probe.sim._rng import uniform
from probe.sim._tokens import tokenize
from probe.suite import PromptVariant, Question, Suite

MAX_EXACT = 200_000
MONTE_CARLO_DRAWS = 200_000


class AgreementTruth(BaseModel):
    """Consistency: the chance of m agreeing samples, and of a right answer given m."""

    model_config = ConfigDict(frozen=True)

    agreeing: int = Field(description="Samples agreeing with the majority answer (m).")
    probability: float = Field(description="P(m).")
    p_right: float | None = Field(description="P(majority answer right | m); None when P(m) = 0.")


class SourceTruth(BaseModel):
    """What one source reports for an item and how likely the answer behind it is right."""

    model_config = ConfigDict(frozen=True)

    available: bool = Field(description="Whether the persona can report this source at all.")
    confidence: float | None = Field(default=None, description="Reported confidence (consistency: expected).")
    p_right: float | None = Field(default=None, description="True probability that the scored answer is right.")
    text: str | None = Field(default=None, description="verbal: the confidence as written.")
    joint_prob: float | None = Field(default=None, description="token, short answers: joint probability.")
    by_agreeing: tuple[AgreementTruth, ...] | None = Field(default=None, description="consistency: per m.")
    exact: bool = Field(default=True, description="False when computed by Monte Carlo.")


class ItemTruth(BaseModel):
    """Ground truth of one item for one persona."""

    model_config = ConfigDict(frozen=True)

    suite: str = Field(description="Suite name.")
    item_id: str = Field(description="Question id.")
    kind: str = Field(description="mc or short.")
    persona: str = Field(description="Persona name.")
    seed: int = Field(description="Simulator seed.")
    variant: str | None = Field(default=None, description="Variant id the truth is for (None: the plain form).")
    system_prompt: bool = Field(default=False, description="Whether the variant's prompts have a system prompt "
                                                           "(the persona reports in its system-prompted form).")
    order: tuple[int, ...] | None = Field(default=None, description="mc: original choice index at each shown "
                                                                    "position, when not the suite's order.")
    logit_shift: float = Field(default=0.0, description="Shift of the latent logit against the plain form.")
    latent_p: float = Field(description="Probability that the greedy answer is right (in this form).")
    answer: str = Field(description="The greedy (temperature 0) answer: option text or answer text.")
    answer_choice: int | None = Field(description="mc: original index of the greedy answer.")
    right: bool = Field(description="Whether the greedy answer is right (the realized draw).")
    token: SourceTruth
    ptrue: SourceTruth
    verbal_numeric: SourceTruth
    verbal_linguistic: SourceTruth
    consistency: SourceTruth


def item_truth(state: ItemState, persona: Persona, *, suite: str, question: Question, seed: int,
               samples: int = 5, temperature: float = 1.0, variant: str | None = None) -> ItemTruth:
    """Truth of one item in the form of ``state`` (which carries its system prompt and order)."""
    base = persona
    persona = persona.prompted(state.system is not None)
    p = state.p
    greedy = state.candidates[state.greedy]
    c = state.reported(persona)[state.greedy]
    if persona.logprobs:
        joint = c ** len(tokenize(greedy.text)) if state.kind == "short" else None
        token = SourceTruth(available=True, confidence=c, p_right=p, joint_prob=joint)
        ptrue = SourceTruth(available=True, confidence=persona.p_true(p), p_right=p)
    else:
        token = ptrue = SourceTruth(available=False)
    percent = persona.verbal_percent(p, state.chance)
    hedge = hedge_for(percent / 100.0, uniform(seed, state.key, "hedge"))
    numeric = SourceTruth(available=True, confidence=percent / 100.0, p_right=p, text=f"{percent}%")
    linguistic = SourceTruth(available=True, confidence=HEDGES[hedge], p_right=p, text=hedge)
    correct = [bool(cand.correct) for cand in state.candidates]
    cons = consistency_truth(state.sampling(persona, temperature), correct, samples,
                             seed=int(uniform(seed, state.key, "mc") * 2**31))
    return ItemTruth(suite=suite, item_id=question.id, kind=state.kind, persona=base.name, seed=seed,
                     variant=variant, system_prompt=state.system is not None, order=state.order,
                     logit_shift=state.shift, latent_p=p, answer=greedy.text, answer_choice=greedy.choice, right=bool(greedy.correct),
                     token=token, ptrue=ptrue, verbal_numeric=numeric, verbal_linguistic=linguistic,
                     consistency=cons)


def suite_truth(suite: Suite, persona: Persona, *, seed: int = 0, samples: int = 5,
                temperature: float = 1.0, knowledge: Knowledge | None = None,
                variant: PromptVariant | str | None = None) -> list[ItemTruth]:
    """Truth for every item of ``suite`` as asked in ``variant`` (a PromptVariant or the id of one
    of the suite's variants; None: the plain form, no system prompt and the suite's option order)."""
    kb = knowledge or Knowledge([suite], seed=seed)
    v = suite_variant(suite, variant) if isinstance(variant, str) else variant
    return [item_truth(kb.state(q, suite.name, v), persona, suite=suite.name, question=q, seed=kb.seed,
                       samples=samples, temperature=temperature, variant=v.id if v else None)
            for q in suite.questions]


def suite_variant(suite: Suite, variant_id: str) -> PromptVariant:
    """The suite's variant with this id; KeyError naming the known ones otherwise."""
    for v in suite.variants:
        if v.id == variant_id:
            return v
    raise KeyError(f"suite {suite.name!r} has no variant {variant_id!r} "
                   f"(known: {', '.join(v.id for v in suite.variants)})")


@lru_cache(maxsize=256)
def _compositions(total: int, parts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every count vector of ``total`` samples over ``parts`` candidates, with the log multinomial
    coefficient, the largest count and which candidates reach it."""
    rows = np.array(list(itertools.combinations(range(total + parts - 1), parts - 1)), dtype=np.int64)
    rows = rows.reshape(-1, parts - 1)
    bounds = np.concatenate([np.full((len(rows), 1), -1), rows, np.full((len(rows), 1), total + parts - 1)],
                            axis=1)
    comps = np.diff(bounds, axis=1) - 1
    coef = math.lgamma(total + 1) - np.sum(_lgamma(comps), axis=1)
    best = comps.max(axis=1)
    return comps, coef, best, comps == best[:, None]


def _lgamma(counts: np.ndarray) -> np.ndarray:
    table = np.array([math.lgamma(c + 1) for c in range(int(counts.max()) + 1)])
    return np.asarray(table[counts])


def consistency_truth(dist: Sequence[float], correct: Sequence[bool], k: int, *, seed: int = 0) -> SourceTruth:
    """Majority vote over ``k`` samples from ``dist``: expected share, P(right), per-m truth."""
    n = len(dist)
    q = np.asarray(dist, dtype=float)
    right = np.asarray(correct, dtype=bool)
    exact = math.comb(k + n - 1, n - 1) <= MAX_EXACT
    if exact:
        comps, coef, best, tied = _compositions(k, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(comps > 0, comps * np.log(q)[None, :], 0.0)
        prob = np.exp(coef + logs.sum(axis=1))
        share_right = (tied & right[None, :]).sum(axis=1) / tied.sum(axis=1)
        weights = prob
    else:
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(k, q / q.sum(), size=MONTE_CARLO_DRAWS)
        best = counts.max(axis=1)
        is_best = counts == best[:, None]
        share_right = (is_best & right[None, :]).sum(axis=1) / is_best.sum(axis=1)
        weights = np.full(MONTE_CARLO_DRAWS, 1.0 / MONTE_CARLO_DRAWS)
    p_m = np.bincount(best, weights=weights, minlength=k + 1)
    right_m = np.bincount(best, weights=weights * share_right, minlength=k + 1)
    by = tuple(AgreementTruth.model_construct(agreeing=m, probability=float(p_m[m]),
                                              p_right=float(right_m[m] / p_m[m]) if p_m[m] > 0 else None)
               for m in range(1, k + 1))
    expected = float(np.dot(np.arange(k + 1) / k, p_m))
    return SourceTruth(available=True, confidence=expected, p_right=float(right_m.sum()),
                       by_agreeing=by, exact=exact)
