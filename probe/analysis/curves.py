"""Reliability curves: equal-width and equal-mass bins with per-bin accuracy and Wilson intervals.

Conventions (shared/calibration.md): equal-width bin index ``min(floor(conf * M), M - 1)``, so bin k
is [k/M, (k+1)/M) and the last bin is closed; equal-mass bins are contiguous runs of the stably
sorted records with sizes as ``numpy.array_split`` gives them (differing by at most one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from probe.analysis._arrays import BoolArray, FloatArray, IntArray, Sorted, split_sizes, width_index, wsum

Binning = Literal["width", "mass"]
SPARSE_BELOW = 30
Z95 = 1.959963984540054


class ReliabilityBin(BaseModel):
    """One bin of a reliability curve."""

    model_config = ConfigDict(frozen=True)

    lo: float | None = Field(description="Lower edge (equal-width) or smallest confidence in the bin "
                                         "(equal-mass); null for an empty equal-mass bin.")
    hi: float | None = Field(description="Upper edge (equal-width) or largest confidence in the bin "
                                         "(equal-mass); null for an empty equal-mass bin.")
    n: int = Field(description="Records in the bin.")
    mean_confidence: float | None = Field(description="Mean confidence in the bin; null when empty.")
    accuracy: float | None = Field(description="Share correct in the bin; null when empty.")
    accuracy_ci: tuple[float, float] | None = Field(
        description="95 % Wilson interval of the bin's accuracy; null when empty.")
    sparse: bool = Field(description=f"n < {SPARSE_BELOW}: decoration, not evidence.")


@dataclass(frozen=True)
class BinTable:
    """Per-bin sufficient statistics (arrays of length M)."""

    lo: FloatArray  # NaN for empty equal-mass bins
    hi: FloatArray
    n: IntArray
    conf_sum: FloatArray
    correct_sum: FloatArray

    @property
    def total(self) -> int:
        return int(self.n.sum())

    @property
    def nonempty(self) -> BoolArray:
        return self.n > 0

    def mean_conf(self) -> FloatArray:
        """Mean confidence per bin (NaN where empty)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.conf_sum / np.maximum(self.n, 1), np.nan)

    def accuracy(self) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.correct_sum / np.maximum(self.n, 1), np.nan)

    def gaps(self) -> FloatArray:
        """conf_b − acc_b over non-empty bins (positive = overconfident)."""
        ne = self.n > 0
        return (self.conf_sum[ne] - self.correct_sum[ne]) / self.n[ne]

    def weights(self) -> FloatArray:
        """n_b / N over non-empty bins."""
        ne = self.n > 0
        return self.n[ne] / self.total

    def to_models(self) -> list[ReliabilityBin]:
        lo_ci, hi_ci = wilson(self.correct_sum, self.n)
        mc, acc = self.mean_conf(), self.accuracy()
        out: list[ReliabilityBin] = []
        for k in range(self.n.size):  # one iteration per bin, not per record
            empty = self.n[k] == 0
            out.append(ReliabilityBin(
                lo=None if np.isnan(self.lo[k]) else float(self.lo[k]),
                hi=None if np.isnan(self.hi[k]) else float(self.hi[k]),
                n=int(self.n[k]),
                mean_confidence=None if empty else float(mc[k]),
                accuracy=None if empty else float(acc[k]),
                accuracy_ci=None if empty else (float(lo_ci[k]), float(hi_ci[k])),
                sparse=bool(self.n[k] < SPARSE_BELOW),
            ))
        return out



def wilson(successes: FloatArray, n: IntArray | FloatArray, z: float = Z95) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval per entry (NaN where n == 0)."""
    n_f = np.asarray(n, dtype=np.float64)
    s = np.asarray(successes, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n_f
        denom = 1.0 + z * z / n_f
        center = (p + z * z / (2.0 * n_f)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n_f + z * z / (4.0 * n_f * n_f)) / denom
    # exact ends: no successes → lower bound 0, all successes → upper bound 1
    lo = np.where(n_f > 0, np.where(s <= 0, 0.0, np.clip(center - half, 0.0, 1.0)), np.nan)
    hi = np.where(n_f > 0, np.where(s >= n_f, 1.0, np.clip(center + half, 0.0, 1.0)), np.nan)
    return lo, hi


def width_table(conf: FloatArray, correct: FloatArray, bins: int) -> BinTable:
    """Equal-width bins [k/M, (k+1)/M), the last one closed."""
    idx = width_index(conf, bins)
    edges = np.arange(bins + 1, dtype=np.float64) / bins
    return BinTable(
        lo=edges[:-1], hi=edges[1:],
        n=np.bincount(idx, minlength=bins).astype(np.int64),
        conf_sum=wsum(idx, conf, bins),
        correct_sum=wsum(idx, correct, bins),
    )


def mass_table(s: Sorted, bins: int) -> BinTable:
    """Equal-mass bins over records sorted stably by confidence (array_split sizes).

    A run of equal confidences that a cut goes through is shared between the two bins in
    proportion (each bin gets its records at the run's accuracy): without ties this is exactly
    the stable-sort result, with ties it no longer depends on the order the records came in.
    """
    sizes = split_sizes(s.n, bins)
    label = np.repeat(np.arange(bins), sizes)
    starts = np.cumsum(sizes) - sizes
    ne = sizes > 0
    lo = np.full(bins, np.nan)
    hi = np.full(bins, np.nan)
    lo[ne] = s.conf[starts[ne]]
    hi[ne] = s.conf[starts[ne] + sizes[ne] - 1]
    return BinTable(
        lo=lo, hi=hi, n=sizes,
        conf_sum=wsum(label, s.conf, bins),
        correct_sum=np.diff(s.correct_before(np.concatenate([[0], np.cumsum(sizes)]))),
    )
