"""Discrimination and selective prediction: AUROC, accuracy–coverage curve, AURC.

All of them depend only on the order of confidences. Records with equal confidence are a tie
group: AUROC counts a tied (correct, wrong) pair as one half, and the coverage functions treat a
tie group straddling a cut-off as mixed in proportion (the expected value under random tie
breaking), so no figure depends on the order records arrive in.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from probe.analysis._arrays import FloatArray, Sorted


class CoveragePoint(BaseModel):
    """Accuracy of the most confident share of records."""

    model_config = ConfigDict(frozen=True)

    coverage: float = Field(description="Share of records kept (most confident first).")
    accuracy: float = Field(description="Accuracy of the kept records (ties at the cut-off mixed in proportion).")
    threshold: float = Field(description="Confidence of the least confident record kept.")


def auroc(s: Sorted) -> float | None:
    """P(confidence of a random correct > that of a random wrong), ties count half; None if undefined."""
    pos = s.group_correct
    neg = s.group_counts - pos
    n_pos, n_neg = float(pos.sum()), float(neg.sum())
    if n_pos == 0 or n_neg == 0:
        return None
    neg_below = np.cumsum(neg) - neg
    return float(np.sum(pos * (neg_below + 0.5 * neg)) / (n_pos * n_neg))


def _descending(s: Sorted) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Tie groups from most to least confident: cumulative counts, cumulative correct, values."""
    counts = s.group_counts[::-1].astype(np.float64)
    correct = s.group_correct[::-1]
    return np.cumsum(counts), np.cumsum(correct), s.group_values[::-1]


def correct_among_top(s: Sorted, k: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Expected correct count among the k most confident records (k may be fractional), and the
    confidence at the cut-off. Tie groups are mixed in proportion."""
    cum_n, cum_c, values = _descending(s)
    g = np.minimum(np.searchsorted(cum_n, k, side="left"), cum_n.size - 1)
    n_before = np.where(g > 0, cum_n[g - 1], 0.0)
    c_before = np.where(g > 0, cum_c[g - 1], 0.0)
    size = cum_n[g] - n_before
    group_acc = (cum_c[g] - c_before) / size
    return c_before + (k - n_before) * group_acc, values[g]


def selective_accuracy(s: Sorted, coverage: float) -> float:
    """Accuracy of the top ``coverage`` share by confidence (the cut-off may fall inside a record or
    a tie group: it then counts in proportion)."""
    if not 0.0 < coverage <= 1.0:
        raise ValueError(f"coverage must be in (0, 1] (got {coverage})")
    k = np.array([coverage * s.n])
    correct, _ = correct_among_top(s, k)
    return float(correct[0] / k[0])


def coverage_curve(s: Sorted, coverages: FloatArray | None = None) -> list[CoveragePoint]:
    """Accuracy–coverage curve at the given coverages (default: 0.05, 0.10, …, 1.00)."""
    cov = np.round(np.arange(1, 21) * 0.05, 10) if coverages is None else np.asarray(coverages, dtype=np.float64)
    if cov.size and (cov.min() <= 0 or cov.max() > 1):
        raise ValueError("coverages must lie in (0, 1]")
    k = cov * s.n
    correct, thr = correct_among_top(s, k)
    acc = correct / k
    return [CoveragePoint(coverage=float(c), accuracy=float(a), threshold=float(t))
            for c, a, t in zip(cov, acc, thr, strict=True)]


def risk_coverage(s: Sorted) -> tuple[FloatArray, FloatArray]:
    """The full curve: coverage k/N and selective risk (1 − accuracy of the top k), k = 1..N."""
    k = np.arange(1, s.n + 1, dtype=np.float64)
    correct, _ = correct_among_top(s, k)
    return k / s.n, 1.0 - correct / k


def aurc(s: Sorted) -> float:
    """Area under the risk–coverage curve: mean over k = 1..N of the selective risk of the top k."""
    _, risk = risk_coverage(s)
    return float(risk.mean())
