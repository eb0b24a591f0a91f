"""The latent model of one item, the same for every persona (pure, deterministic from the seed).

For an item with key ``K`` (a hash of its kind, text, choices and aliases) and the simulator
seed ``s``:

* **Latent p.** ``t = σ(μ + δ + 1.6·z)`` with ``z = normal(s, K, "p")``, ``μ = 0.4`` for mc and
  ``0.9`` for short answers, and ``δ`` from a ``difficulty:<level>`` tag (trivial +1.8, easy +1,
  medium 0, hard −1, very-hard/expert −1.8). For a k-option mc question ``p = 1/k + (1 − 1/k)·t``
  (never below chance, so the greedy answer is also the most probable option); for a short
  answer ``p = 0.02 + 0.96·t``. Over the bundled suites mean p is about 0.6–0.7.
* **Greedy answer.** Right iff ``uniform(s, K, "right") < p``, so it is right with probability p.
  Wrong: an mc question answers a wrong option drawn uniformly; a short one answers its first
  near miss.
* **Belief** (calibrated distribution over the candidates; ``belief[greedy] = p``). The other
  candidates share ``1 − p`` by weights ``exp(0.7·z_j)`` (mixed toward uniform just enough that
  none exceeds p). When the greedy answer is wrong, the correct candidate takes slot j with
  probability proportional to that slot's share, so *every* option's belief is calibrated, not
  only the greedy one's.
* **Candidates of a short answer**: the correct answer (the first alias, or now and then another
  alias) and three near misses: numbers off by small amounts for numeric answers, otherwise the
  answers of other questions of the same suite and subject, never equal to an alias after
  ``probe.grading.normalize_answer``.
* **Unknown questions** get a guess: a hashed option at ``p = b + 0.05·(1 − b)`` (mc) or a guess
  text at ``p = 0.08`` (short); they have no truth.

**Variant forms.** The prompt can change what the model knows a little: the latent logit
``μ + δ + 1.6·z`` above moves by ``form_shift`` (0 for the plain form, so the plain form is
exactly the model above):

* a system prompt with text S: ``+ 0.25·normal(s, K, "system", S)`` (zero mean: a system prompt
  does not make it more accurate, it changes which items it gets right now and then);
* mc options in an order other than the suite's (``order[j]`` = original index shown at position
  j): ``+ 0.5·(a − j_a)/(k − 1) + 0.3·normal(s, K, "order", order)``, where a is the correct
  answer's original position and ``j_a`` its shown one: position bias (an answer moved to the
  front gains up to 0.5 on the logit scale, one moved to the back loses as much) plus a per-order
  draw.

Everything else (the right draw, the wrong option, the belief) is computed as above with the
shifted p, with the same uniform numbers, so most answers stay the same across variants and the
state of every form is again calibrated: its greedy answer is right with probability p.

A persona turns the belief into the distribution it reports (``ItemState.reported``): the greedy
answer gets ``c = f(p)`` (see ``probe.sim._personas``), the others share ``1 − c`` in proportion
to their belief. Samples at temperature T > 0 are drawn from the reported distribution raised to
``1/T`` and renormalized.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import blake2b

from probe.grading import normalize_answer
from probe.sim._personas import Persona
from probe.sim._rng import normal, pick, sigmoid, uniform
from probe.suite import Question

MU_MC = 0.4
MU_SHORT = 0.9
SPREAD = 1.6
REST_SPREAD = 0.7
SHORT_FLOOR = 0.02
NEAR_MISSES = 3
GUESS_EXCESS = 0.05
GUESS_SHORT_P = 0.08
OTHER_ALIAS_RATE = 0.25
SYSTEM_JITTER = 0.25
POSITION_BIAS = 0.5
ORDER_JITTER = 0.3
DIFFICULTY_SHIFT = {"trivial": 1.8, "easy": 1.0, "medium": 0.0, "hard": -1.0, "very-hard": -1.8,
                    "very_hard": -1.8, "expert": -1.8}
_INT = re.compile(r"-?\d{1,3}(?:,\d{3})+|-?\d+")
_NUMERIC_OFFSETS = (1, -1, 10, -10, 2, -2, 100, -100, 9, -9, 11, -11, 20, -20, 3, -3)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One answer the model may give."""

    text: str
    choice: int | None  # mc: index among the options (original order; shown order for guesses)
    correct: bool | None  # None for questions the simulator does not know


class ItemState:
    """Latent state of one item: candidates, greedy answer, belief; reported forms cached."""

    __slots__ = ("_cache", "accepted", "belief", "candidates", "chance", "greedy", "key", "kind", "known", "order",
                 "p", "shift", "system")

    def __init__(self, *, key: str, kind: str, chance: float, p: float, greedy: int,
                 candidates: tuple[Candidate, ...], belief: tuple[float, ...], known: bool,
                 accepted: frozenset[str] = frozenset(), order: tuple[int, ...] | None = None,
                 system: str | None = None, shift: float = 0.0) -> None:
        self.key = key
        self.kind = kind
        self.chance = chance
        self.p = p
        self.greedy = greedy
        self.candidates = candidates
        self.belief = belief
        self.known = known
        self.accepted = accepted  # normalized aliases of a known short question
        self.order = order  # mc, shown in another order: original index at each shown position
        self.system = system  # the system prompt of this form, if any
        self.shift = shift  # latent logit shift of this form against the plain one
        self._cache: dict[object, tuple[float, ...]] = {}

    @property
    def right(self) -> bool | None:
        """Whether the greedy answer is right (None for an unknown question)."""
        return self.candidates[self.greedy].correct

    def reported(self, persona: Persona) -> tuple[float, ...]:
        """The distribution over the candidates that ``persona`` reports (and samples from)."""
        cached = self._cache.get(persona.key)
        if cached is None:
            cached = self._cache[persona.key] = _report(self, persona)
        return cached

    def sampling(self, persona: Persona, temperature: float) -> tuple[float, ...]:
        """Sampling distribution at ``temperature``: reported ** (1/T), renormalized."""
        key = (persona.key, temperature)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = tempered(self.reported(persona), temperature, self.greedy)
        return cached


def tempered(dist: Sequence[float], temperature: float, greedy: int) -> tuple[float, ...]:
    """``dist`` raised to 1/T and renormalized; T = 0 puts everything on ``greedy``."""
    if temperature <= 0:
        return tuple(1.0 if i == greedy else 0.0 for i in range(len(dist)))
    logs = [math.log(max(x, 1e-300)) / temperature for x in dist]
    top = max(logs)
    w = [math.exp(v - top) for v in logs]
    total = math.fsum(w)
    return tuple(v / total for v in w)


def _report(state: ItemState, persona: Persona) -> tuple[float, ...]:
    c = persona.token_confidence(state.p, state.chance)
    if c == state.p:
        return state.belief
    rest = [i for i in range(len(state.belief)) if i != state.greedy]
    rest_total = math.fsum(state.belief[i] for i in rest)
    shares = [state.belief[i] / rest_total for i in rest] if rest_total > 0 else [1.0 / len(rest)] * len(rest)
    masses = spread(1.0 - c, shares, c)
    out = [0.0] * len(state.belief)
    out[state.greedy] = c
    for i, m in zip(rest, masses, strict=True):
        out[i] = m
    return tuple(out)


def spread(total: float, shares: Sequence[float], cap: float) -> list[float]:
    """``total`` split by ``shares``, mixed toward uniform just enough that no part exceeds ``cap``
    (when even the uniform split exceeds it, the uniform split)."""
    n = len(shares)
    if n == 0:
        return []
    uniform_part = total / n
    top = max(shares) * total
    if top <= cap + 1e-15:
        return [s * total for s in shares]
    if uniform_part >= cap:
        return [uniform_part] * n
    lam = (cap - uniform_part) / (top - uniform_part)
    return [lam * s * total + (1.0 - lam) * uniform_part for s in shares]


def item_key(q: Question) -> str:
    """Stable identity of a question's content (not of the suite it is in)."""
    content = json.dumps([q.kind, q.text, q.choices, q.aliases], ensure_ascii=False, separators=(",", ":"))
    return blake2b(content.encode(), digest_size=10).hexdigest()


def difficulty_shift(tags: Sequence[str]) -> float:
    for tag in tags:
        name, _, value = tag.partition(":")
        if name == "difficulty" and value in DIFFICULTY_SHIFT:
            return DIFFICULTY_SHIFT[value]
    return 0.0


def normal_order(order: Sequence[int] | None) -> tuple[int, ...] | None:
    """``order`` as a tuple, or None when it is the original order (the plain form)."""
    if order is None or all(i == j for i, j in enumerate(order)):
        return None
    return tuple(order)


def normal_system(system: str | None) -> str | None:
    """The system prompt as the simulator keys it: stripped, None when empty."""
    text = (system or "").strip()
    return text or None


def form_shift(seed: int, key: str, *, system: str | None = None, order: Sequence[int] | None = None,
               answer: int | None = None) -> float:
    """Shift of an item's latent logit under a prompt variant (see the module docstring); ``order``
    and ``answer`` only for mc. 0 for the plain form (no system prompt, original order)."""
    shift = 0.0
    if system is not None:
        shift += SYSTEM_JITTER * normal(seed, key, "system", system)
    if order is not None and answer is not None:
        k = len(order)
        shown = list(order).index(answer)
        shift += POSITION_BIAS * (answer - shown) / (k - 1)
        shift += ORDER_JITTER * normal(seed, key, "order", ",".join(map(str, order)))
    return shift


def _rest_shares(seed: int, key: str, n: int) -> list[float]:
    w = [math.exp(REST_SPREAD * normal(seed, key, "w", j)) for j in range(n)]
    total = math.fsum(w)
    return sorted((v / total for v in w), reverse=True)


def _order(seed: int, key: str, items: Sequence[int]) -> list[int]:
    return sorted(items, key=lambda i: uniform(seed, key, "perm", i))


def _assign(seed: int, key: str, p: float, right: bool, correct: int, wrong: Sequence[int],
            n: int) -> tuple[int, list[float]]:
    """Greedy candidate and belief over ``n`` candidates (see the module docstring)."""
    masses = spread(1.0 - p, _rest_shares(seed, key, n - 1), p)
    belief = [0.0] * n
    if right:
        greedy = correct
        slots = _order(seed, key, wrong)
    else:
        greedy = wrong[min(int(uniform(seed, key, "wrong") * len(wrong)), len(wrong) - 1)]
        others = _order(seed, key, [w for w in wrong if w != greedy])
        slot = pick(masses, uniform(seed, key, "slot"))
        slots = [*others[:slot], correct, *others[slot:]]
    belief[greedy] = p
    for cand, m in zip(slots, masses, strict=True):
        belief[cand] = m
    return greedy, belief


def mc_state(q: Question, seed: int, *, order: Sequence[int] | None = None,
             system: str | None = None) -> ItemState:
    """Latent state of a known multiple-choice question, in the form of a prompt with the options in
    ``order`` (original indices in shown order; None: the suite's order) and system prompt ``system``."""
    assert q.choices is not None and q.answer is not None
    key = item_key(q)
    k = len(q.choices)
    chance = 1.0 / k
    order, system = normal_order(order), normal_system(system)
    shift = form_shift(seed, key, system=system, order=order, answer=q.answer)
    t = sigmoid(MU_MC + difficulty_shift(q.tags) + SPREAD * normal(seed, key, "p") + shift)
    p = chance + (1.0 - chance) * t
    right = uniform(seed, key, "right") < p
    wrong = [i for i in range(k) if i != q.answer]
    greedy, belief = _assign(seed, key, p, right, q.answer, wrong, k)
    cands = tuple(Candidate(text=c, choice=i, correct=i == q.answer) for i, c in enumerate(q.choices))
    return ItemState(key=key, kind="mc", chance=chance, p=p, greedy=greedy, candidates=cands,
                     belief=tuple(belief), known=True, order=order, system=system, shift=shift)


def short_state(q: Question, seed: int, peers: Sequence[str] = (), *, system: str | None = None) -> ItemState:
    """Latent state of a known short-answer question (under system prompt ``system``); ``peers`` are
    answers of related questions."""
    assert q.aliases is not None
    key = item_key(q)
    system = normal_system(system)
    shift = form_shift(seed, key, system=system)
    t = sigmoid(MU_SHORT + difficulty_shift(q.tags) + SPREAD * normal(seed, key, "p") + shift)
    p = SHORT_FLOOR + (1.0 - 2 * SHORT_FLOOR) * t
    right = uniform(seed, key, "right") < p
    written = q.aliases[0]
    if len(q.aliases) > 1 and uniform(seed, key, "alias") < OTHER_ALIAS_RATE:
        written = q.aliases[1 + int(uniform(seed, key, "which-alias") * (len(q.aliases) - 1))]
    misses = near_misses(q.aliases, peers, seed, key)
    cands = (Candidate(text=written, choice=None, correct=True),
             *(Candidate(text=m, choice=None, correct=False) for m in misses))
    # a wrong greedy answer is always the first near miss
    if right:
        greedy, belief = _assign(seed, key, p, True, 0, [1, 2, 3], 4)
    else:
        masses = spread(1.0 - p, _rest_shares(seed, key, 3), p)
        slot = pick(masses, uniform(seed, key, "slot"))
        others = _order(seed, key, [2, 3])
        slots = [*others[:slot], 0, *others[slot:]]
        belief = [0.0] * 4
        greedy = 1
        belief[1] = p
        for cand, m in zip(slots, masses, strict=True):
            belief[cand] = m
    return ItemState(key=key, kind="short", chance=0.0, p=p, greedy=greedy, candidates=cands,
                     belief=tuple(belief), known=True,
                     accepted=frozenset(normalize_answer(a) for a in q.aliases), system=system, shift=shift)


def near_misses(aliases: Sequence[str], peers: Sequence[str], seed: int, key: str,
                count: int = NEAR_MISSES) -> list[str]:
    """Plausible wrong answers that no alias matches after answer normalization."""
    banned = {normalize_answer(a) for a in aliases}
    out: list[str] = []

    def add(text: str) -> None:
        norm = normalize_answer(text)
        if norm and norm not in banned and len(out) < count:
            banned.add(norm)
            out.append(text)

    canonical = aliases[0].strip()
    if _INT.fullmatch(canonical):
        value = int(canonical.replace(",", ""))
        offsets = sorted(_NUMERIC_OFFSETS, key=lambda d: uniform(seed, key, "offset", d))
        for d in offsets:
            if len(out) >= count:
                return out
            add(str(value + d))
    pool = list(dict.fromkeys(peers))
    if pool:
        # a hashed starting point and stride through the peers (cheap for thousands of them)
        start = int(uniform(seed, key, "peer") * len(pool))
        stride = _coprime_stride(len(pool), uniform(seed, key, "stride"))
        for i in range(len(pool)):
            if len(out) >= count:
                return out
            add(pool[(start + i * stride) % len(pool)])
    i = 0
    while len(out) < count:
        add(_mutate(canonical, i) if i < 40 else f"{canonical} {i}")
        i += 1
    return out


def _coprime_stride(n: int, u: float) -> int:
    """A step in [1, n) sharing no factor with n (so striding visits every element once)."""
    if n <= 2:
        return 1
    step = 1 + int(u * (n - 1))
    while math.gcd(step, n) != 1:
        step = step % (n - 1) + 1
    return step


def _mutate(text: str, i: int) -> str:
    """A misspelling-like near miss: swap, double or drop a character."""
    if len(text) < 2:
        return text + text
    pos = 1 + (i // 3) % max(1, len(text) - 1)
    pos = min(pos, len(text) - 1)
    match i % 3:
        case 0:
            return text[: pos - 1] + text[pos] + text[pos - 1] + text[pos + 1:]
        case 1:
            return text[:pos] + text[pos] + text[pos:]
        case _:
            return text[:pos] + text[pos + 1:]


def guess_mc_state(shown: Sequence[str], prompt_key: str, seed: int) -> ItemState:
    """A guess on an mc question it does not know: a hashed option at low confidence."""
    k = len(shown)
    chance = 1.0 / k
    p = chance + GUESS_EXCESS * (1.0 - chance)
    greedy = min(int(uniform(seed, prompt_key, "guess") * k), k - 1)
    belief = tuple(p if i == greedy else (1.0 - p) / (k - 1) for i in range(k))
    cands = tuple(Candidate(text=t, choice=i, correct=None) for i, t in enumerate(shown))
    return ItemState(key=prompt_key, kind="mc", chance=chance, p=p, greedy=greedy, candidates=cands,
                     belief=belief, known=False)


def guess_short_state(question_text: str, prompt_key: str, seed: int) -> ItemState:
    """A guess on a short question it does not know: a number or a name taken from the question."""
    numbers = [int(n.replace(",", "")) for n in _INT.findall(question_text)]
    words = [w.strip("?.,;:!\"'()") for w in question_text.split()[1:]]
    names = [w for w in words if w[:1].isupper()]
    guess = str(max(numbers)) if numbers else (names[-1] if names else "Unknown")
    misses = near_misses([guess], (), seed, prompt_key)
    p = GUESS_SHORT_P
    cands = (Candidate(text=guess, choice=None, correct=None),
             *(Candidate(text=m, choice=None, correct=None) for m in misses))
    rest = spread(1.0 - p, _rest_shares(seed, prompt_key, len(misses)), p)
    return ItemState(key=prompt_key, kind="short", chance=0.0, p=p, greedy=0, candidates=cands,
                     belief=(p, *rest), known=False)
