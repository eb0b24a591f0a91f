"""Input checks shared by the analysis functions: (confidence, correct) pairs as numpy arrays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

ArrayLike = npt.ArrayLike | Sequence[float]


def as_pairs(conf: ArrayLike, correct: ArrayLike, *, allow_empty: bool = False) -> tuple[FloatArray, FloatArray]:
    """Validated float arrays (confidence in [0, 1], correct in {0, 1}); raises ValueError otherwise.

    NaN or out-of-range confidence is an input error, never clipped.
    """
    c = np.asarray(conf, dtype=np.float64)
    y_raw = np.asarray(correct)
    if c.ndim != 1 or y_raw.ndim != 1:
        raise ValueError(f"confidence and correct must be 1-D arrays (got shapes {c.shape} and {y_raw.shape})")
    if c.shape != y_raw.shape:
        raise ValueError(f"confidence and correct differ in length ({c.size} vs {y_raw.size})")
    if c.size == 0 and not allow_empty:
        raise ValueError("no records: metrics are undefined for an empty group")
    bad = ~np.isfinite(c) | (c < 0.0) | (c > 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"confidence must be a finite number in [0, 1]: index {i} is {c[i]!r}"
                         f" ({int(bad.sum())} bad value(s))")
    y = y_raw.astype(np.float64)
    bad_y = ~((y == 0.0) | (y == 1.0))
    if bad_y.any():
        i = int(np.flatnonzero(bad_y)[0])
        raise ValueError(f"correct must be 0/1 or bool: index {i} is {y_raw[i]!r}")
    return c, y


def width_index(conf: FloatArray, bins: int) -> IntArray:
    """Equal-width bin of each confidence: min(floor(conf * M), M - 1) (last bin closed)."""
    return np.minimum(np.floor(conf * bins).astype(np.int64), bins - 1)


def wsum(index: IntArray, weights: FloatArray, length: int) -> FloatArray:
    """Sum of ``weights`` per index value 0..length-1 (bincount with weights, typed as float)."""
    return np.asarray(np.bincount(index, weights=weights, minlength=length), dtype=np.float64)


def split_sizes(n: int, bins: int) -> IntArray:
    """Sizes of numpy.array_split(range(n), bins): the first n % M parts are one longer."""
    q, r = divmod(n, bins)
    sizes = np.full(bins, q, dtype=np.int64)
    sizes[:r] += 1
    return sizes


def check_bins(bins: int) -> int:
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 1:
        raise ValueError(f"bins must be a positive integer (got {bins!r})")
    return int(bins)


@dataclass(frozen=True)
class Sorted:
    """Records sorted by confidence (stable), with their tie groups (runs of equal confidence)."""

    conf: FloatArray
    correct: FloatArray

    @classmethod
    def of(cls, conf: FloatArray, correct: FloatArray) -> Sorted:
        order = np.argsort(conf, kind="stable")
        return cls(conf=conf[order], correct=correct[order])

    @property
    def n(self) -> int:
        return int(self.conf.size)

    @cached_property
    def group_starts(self) -> IntArray:
        """Index of the first record of each distinct confidence value."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int64)
        change = np.flatnonzero(self.conf[1:] != self.conf[:-1]) + 1
        return np.concatenate([np.zeros(1, dtype=np.int64), change.astype(np.int64)])

    @cached_property
    def group_counts(self) -> IntArray:
        return np.diff(np.append(self.group_starts, self.n)).astype(np.int64)

    @cached_property
    def group_correct(self) -> FloatArray:
        if self.n == 0:
            return np.zeros(0)
        return np.add.reduceat(self.correct, self.group_starts).astype(np.float64)

    @cached_property
    def group_values(self) -> FloatArray:
        return self.conf[self.group_starts]

    def correct_before(self, positions: IntArray) -> FloatArray:
        """Correct count among the first p sorted records, a tie group counted in proportion when p
        cuts through it (so the result does not depend on the input order of tied records)."""
        pos = np.asarray(positions, dtype=np.float64)
        if self.n == 0:
            return np.zeros(pos.shape)
        ends = (self.group_starts + self.group_counts).astype(np.float64)
        cum = np.cumsum(self.group_correct)
        g = np.minimum(np.searchsorted(ends, pos, side="left"), ends.size - 1)
        before = cum[g] - self.group_correct[g]
        share = (pos - self.group_starts[g]) / self.group_counts[g]
        return np.where(pos <= 0, 0.0, before + share * self.group_correct[g])
