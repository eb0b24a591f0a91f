"""The simulated personas and their true calibration.

All personas share one latent model of every item (see ``probe.sim._items``): the probability
``p`` that the greedy answer is right, and a calibrated *belief* over the candidate answers
(the options of an mc question; the correct answer and three near misses of a short one) with
``belief[greedy] = p``. The personas differ only in how they *report* a belief ``x``:

    f(x) = b + (1 − b) · ((x − b) / (1 − b)) ** γ        (x ≥ b; f(x) = x below b)

``b`` is the chance level (1/k for a k-option mc question, 0 for short answers and for P(True))
and ``γ`` the persona's exponent for that source: γ = 1 reports x itself (calibrated), γ < 1
raises it (overconfident), γ > 1 lowers it (underconfident). ``f`` is increasing, so the true
probability of being right behind a reported ``c`` is its inverse:

    P(right | c) = f⁻¹(c) = b + (1 − b) · ((c − b) / (1 − b)) ** (1 / γ)

=================  =========  =========  ===========================  =========
persona            token γ    P(True) γ  verbal                       logprobs
=================  =========  =========  ===========================  =========
calibrated         1          1          round(100·x) %               yes
overconfident      0.4        0.4        round(100·f(x)), γ = 0.4     yes
underconfident     2          2          round(100·f(x)), γ = 2       yes
nologprobs         1          1          round(100·x) %               never
verbal-rounder     1          1          1 − (1 − x)/2, to tens       yes
=================  =========  =========  ===========================  =========

``verbal-rounder`` states half its true error rate and rounds to a multiple of ten (60 %…100 %
on four-option questions), as chat models do. The linguistic verbal form states the hedge of
``probe.prompts.HEDGES`` whose number is nearest the numeric statement.

**With a system prompt** (any non-empty system or developer message, or Anthropic's ``system``)
a persona reports through ``with_system_prompt()``: its token and P(True) exponents are
multiplied by ``system_gamma`` and its verbal exponent (or, for the rounder, the share of its
error rate it states) by ``system_verbal`` — more confident, as a "you are an expert" prompt
makes chat models, without making it know more (the latent p of an item moves only by the
variant's small shift, ``probe.sim._items.form_shift``, which every persona shares):

=================  ============  ============  ==========================================
persona            system_gamma  system_verbal with a system prompt
=================  ============  ============  ==========================================
calibrated         1             1             unchanged: calibrated under every prompt
overconfident      0.75          0.75          γ = 0.3 everywhere (more overconfident)
underconfident     0.75          0.75          γ = 1.5 everywhere (less underconfident)
nologprobs         1             1             unchanged
verbal-rounder     1             2/3           logprobs calibrated; states a third of its error
=================  ============  ============  ==========================================
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from probe.prompts import HEDGES

VerbalStyle = Literal["exact", "rounder"]
MODEL_PREFIX = "sim-"


class Persona(BaseModel):
    """One simulated model: how it reports its (latent, calibrated) beliefs."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Persona name; the model is called 'sim-<name>'.")
    summary: str = Field(description="One line on what it is like.")
    logprobs: bool = Field(description="Whether it returns logprobs when asked.")
    token_gamma: float = Field(gt=0, description="Exponent γ of the reported option probability.")
    ptrue_gamma: float = Field(gt=0, description="Exponent γ of the reported P(True).")
    verbal_gamma: float = Field(gt=0, description="Exponent γ of the stated confidence (style 'exact').")
    verbal_style: VerbalStyle = Field(description="exact: round(100·f(x)); rounder: 1 − s·(1 − x) to tens.")
    verbal_error_share: float = Field(default=0.5, gt=0, le=1,
                                      description="rounder: the share s of its error rate it states.")
    system_gamma: float = Field(default=1.0, gt=0, le=1,
                                description="With a system prompt: factor on the token and P(True) γ.")
    system_verbal: float = Field(default=1.0, gt=0, le=1,
                                 description="With a system prompt: factor on the verbal γ (exact) or on the "
                                             "stated error share (rounder).")
    system_prompted: bool = Field(default=False,
                                  description="True for the form it takes under a system prompt.")

    @property
    def model_id(self) -> str:
        return MODEL_PREFIX + self.name

    @property
    def key(self) -> str:
        """Cache key of what it reports: the name, plus '+system' for its system-prompted form."""
        return self.name + "+system" if self.system_prompted else self.name

    def prompted(self, system: bool) -> Persona:
        """How it reports under a prompt with (``system``) or without a system prompt."""
        return with_system_prompt(self) if system else self

    def token_confidence(self, x: float, chance: float) -> float:
        """Probability it reports on an answer it believes right with probability ``x``."""
        return report(x, chance, self.token_gamma)

    def token_truth(self, c: float, chance: float) -> float:
        """True probability of being right behind a reported option probability ``c``."""
        return unreport(c, chance, self.token_gamma)

    def p_true(self, x: float) -> float:
        """P(True) it reports for a proposed answer it believes right with probability ``x``."""
        return report(x, 0.0, self.ptrue_gamma)

    def verbal_percent(self, x: float, chance: float) -> int:
        """The confidence it states, in percent, for an answer it believes right with prob. ``x``."""
        if self.verbal_style == "rounder":
            return min(100, 10 * math.floor(10 * (1.0 - (1.0 - x) * self.verbal_error_share) + 0.5))
        return min(100, max(0, math.floor(100.0 * report(x, chance, self.verbal_gamma) + 0.5)))


@lru_cache(maxsize=64)
def with_system_prompt(persona: Persona) -> Persona:
    """The persona as it reports under a system prompt: token and P(True) γ times
    ``system_gamma``, verbal γ (or the rounder's stated error share) times ``system_verbal``."""
    if persona.system_prompted:
        return persona
    sg, sv = persona.system_gamma, persona.system_verbal
    return persona.model_copy(update={
        "token_gamma": persona.token_gamma * sg, "ptrue_gamma": persona.ptrue_gamma * sg,
        "verbal_gamma": persona.verbal_gamma * sv, "verbal_error_share": persona.verbal_error_share * sv,
        "system_gamma": 1.0, "system_verbal": 1.0, "system_prompted": True})


def report(x: float, chance: float, gamma: float) -> float:
    """f(x) = b + (1 − b)·((x − b)/(1 − b))**γ above chance b; x itself at or below it."""
    if x <= chance or gamma == 1.0:
        return x
    return chance + (1.0 - chance) * float(((x - chance) / (1.0 - chance)) ** gamma)


def unreport(c: float, chance: float, gamma: float) -> float:
    """The inverse of ``report``: the belief behind a reported value."""
    return report(c, chance, 1.0 / gamma)


def hedge_for(value: float, tie_break: float) -> str:
    """The hedge expression whose number is nearest ``value`` (``tie_break`` in (0,1) picks among
    expressions that share a number, e.g. 'likely' and 'probably')."""
    best = min(abs(v - value) for v in HEDGES.values())
    nearest = [h for h, v in HEDGES.items() if abs(abs(v - value) - best) < 1e-12]
    values = sorted({HEDGES[h] for h in nearest})
    chosen = [h for h in nearest if HEDGES[h] == values[-1]]  # between two equally near, the higher
    return chosen[min(int(tie_break * len(chosen)), len(chosen) - 1)]


PERSONAS: dict[str, Persona] = {
    p.name: p
    for p in (
        Persona(name="calibrated", summary="Reports its true beliefs: every source is calibrated.",
                logprobs=True, token_gamma=1.0, ptrue_gamma=1.0, verbal_gamma=1.0, verbal_style="exact"),
        Persona(name="overconfident", summary="Sharpened like an RLHF chat model: every source overstates.",
                logprobs=True, token_gamma=0.4, ptrue_gamma=0.4, verbal_gamma=0.4, verbal_style="exact",
                system_gamma=0.75, system_verbal=0.75),
        Persona(name="underconfident", summary="Flattened: every source understates.",
                logprobs=True, token_gamma=2.0, ptrue_gamma=2.0, verbal_gamma=2.0, verbal_style="exact",
                system_gamma=0.75, system_verbal=0.75),
        Persona(name="nologprobs", summary="Calibrated, but ignores `logprobs` (returns none), like many hosts.",
                logprobs=False, token_gamma=1.0, ptrue_gamma=1.0, verbal_gamma=1.0, verbal_style="exact"),
        Persona(name="verbal-rounder", summary="Calibrated logprobs; says confidences in tens and overstates.",
                logprobs=True, token_gamma=1.0, ptrue_gamma=1.0, verbal_gamma=1.0, verbal_style="rounder",
                system_verbal=2 / 3),
    )
}


def persona_for_model(model: str) -> Persona | None:
    """The persona a model name selects: 'sim-<persona>', '<persona>' or 'sim/<persona>'."""
    name = model.strip()
    for prefix in (MODEL_PREFIX, "sim/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return PERSONAS.get(name)
