"""Deterministic draws: every random number is a hash of what it is for (no global RNG state).

``uniform("seed", 0, "item", "k3…", "right")`` is the same number on every machine and in every
process, so the simulator's answers depend only on (seed, item, purpose, sample index).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from hashlib import blake2b
from statistics import NormalDist

_SCALE = 2.0**-64
_STANDARD = NormalDist()


def uniform(*parts: object) -> float:
    """A number in the open interval (0, 1) determined by ``parts``."""
    digest = blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 0.5) * _SCALE


def normal(*parts: object) -> float:
    """A standard normal number determined by ``parts``."""
    return _STANDARD.inv_cdf(uniform(*parts))


def pick(weights: Sequence[float], u: float) -> int:
    """Index drawn from ``weights`` (need not sum to 1) by the uniform number ``u``."""
    target = u * math.fsum(weights)
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w
        if target < acc:
            return i
    return max(i for i, w in enumerate(weights) if w > 0) if any(w > 0 for w in weights) else 0


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
