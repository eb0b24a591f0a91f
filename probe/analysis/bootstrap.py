"""Percentile bootstrap intervals and the paired bootstrap for differences between two groups.

The bootstrap resamples records (or, paired, items) with replacement. Instead of materializing
each resample, it draws how many times each cell of records is picked (one multinomial draw per
resample over the cells of ``_cells``) and computes the metrics from those counts: with at most
``max_cells`` distinct confidences this is the exact bootstrap distribution for accuracy,
equal-width ECE, Brier and AUROC; ``exact_bootstrap`` is the plain loop it is checked against.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from probe.analysis._arrays import ArrayLike, FloatArray, IntArray, Sorted, as_pairs, check_bins
from probe.analysis._cells import DEFAULT_MAX_CELLS, CellSet, CountMetrics, build_cells, metrics_from_counts
from probe.analysis.curves import mass_table, width_table
from probe.analysis.metrics import CalibrationMetrics, metrics_of_sorted
from probe.analysis.ranking import auroc

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
Metric = Literal["accuracy", "ece", "ece_mass", "brier", "auroc"]
METRICS: tuple[Metric, ...] = ("accuracy", "ece", "ece_mass", "brier", "auroc")
_CHUNK_ELEMENTS = 2_000_000  # rows × cells per chunk (memory bound)

Interval = tuple[float, float]


class BootstrapIntervals(BaseModel):
    """Percentile bootstrap intervals over records for one group."""

    model_config = ConfigDict(frozen=True)

    resamples: int = Field(description="Bootstrap resamples B.")
    seed: int = Field(description="Seed of the resampling generator.")
    level: float = Field(description="Coverage of the intervals (0.95 = 2.5th to 97.5th percentile).")
    cells: int = Field(description="Cells the records were compressed into.")
    exact: bool = Field(description="True when every distinct confidence is its own cell (then the "
                                    "resampling distribution is exactly that of resampled records).")
    accuracy_ci: Interval = Field(description="Interval for accuracy.")
    ece_ci: Interval = Field(description="Interval for ECE over equal-width bins.")
    ece_mass_ci: Interval = Field(description="Interval for ECE over equal-mass bins.")
    brier_ci: Interval = Field(description="Interval for the Brier score.")
    auroc_ci: Interval | None = Field(description="Interval for AUROC; null when AUROC is undefined.")
    auroc_defined: int = Field(description="Resamples in which AUROC was defined (both classes present).")
    unit: Literal["record", "item"] = Field(
        default="record", description="What was resampled: records, or items with all their records.")


class PairedDifference(BaseModel):
    """metric(a) − metric(b) over the items both groups answered, with a paired bootstrap."""

    model_config = ConfigDict(frozen=True)

    metric: Metric = Field(description="Metric compared.")
    items: int = Field(description="Items present (with scored records) in both groups.")
    n_a: int = Field(description="Records of group a on those items.")
    n_b: int = Field(description="Records of group b on those items.")
    a: float | None = Field(description="Metric of group a on the shared items.")
    b: float | None = Field(description="Metric of group b on the shared items.")
    difference: float | None = Field(description="a − b; null when the metric is undefined for either.")
    ci: Interval | None = Field(description="Percentile interval of the difference.")
    p_value: float | None = Field(description="Two-sided bootstrap p-value for 'no difference': "
                                              "min(1, 2·min((1+#d*≤0), (1+#d*≥0))/(B+1)).")
    resamples: int = Field(description="Resamples B (items drawn with replacement, jointly for a and b).")
    defined: int = Field(description="Resamples in which the difference was defined.")
    seed: int = Field(description="Seed of the resampling generator.")


def percentile_interval(values: FloatArray, level: float) -> Interval | None:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return None
    lo, hi = np.quantile(v, [(1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0])
    return float(lo), float(hi)


def _check(resamples: int, level: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1 (got {resamples})")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1) (got {level})")


def _chunks(total: int, cells: int) -> list[int]:
    step = max(1, min(total, _CHUNK_ELEMENTS // max(cells, 1)))
    return [min(step, total - start) for start in range(0, total, step)]


def _concat(parts: list[CountMetrics]) -> CountMetrics:
    return CountMetrics(**{f: np.concatenate([getattr(p, f) for p in parts])
                           for f in ("accuracy", "ece_width", "ece_mass", "brier", "auroc")})


def bootstrap_replicates(conf: ArrayLike, correct: ArrayLike, *, bins: int = 10,
                         resamples: int = DEFAULT_RESAMPLES, seed: int | np.random.SeedSequence = DEFAULT_SEED,
                         max_cells: int = DEFAULT_MAX_CELLS) -> tuple[CountMetrics, CellSet]:
    """Bootstrap replicates of the metrics via multinomial cell counts (see module doc)."""
    m = check_bins(bins)
    c, y = as_pairs(conf, correct)
    return replicates_of_sorted(Sorted.of(c, y), m, resamples, seed, max_cells)


def replicates_of_sorted(s: Sorted, bins: int, resamples: int, seed: int | np.random.SeedSequence,
                         max_cells: int = DEFAULT_MAX_CELLS) -> tuple[CountMetrics, CellSet]:
    cells = build_cells(s, bins, max_cells)
    counts = np.concatenate([cells.pos, cells.neg])
    present = np.flatnonzero(counts > 0)
    probs = counts[present] / s.n
    probs /= probs.sum()
    rng = np.random.default_rng(seed)
    parts: list[CountMetrics] = []
    for rows in _chunks(resamples, cells.size):
        drawn = np.zeros((rows, counts.size))
        drawn[:, present] = rng.multinomial(s.n, probs, size=rows)
        parts.append(metrics_from_counts(cells, drawn[:, : cells.size], drawn[:, cells.size:]))
    return _concat(parts), cells


def bootstrap_intervals(conf: ArrayLike, correct: ArrayLike, *, bins: int = 10,
                        resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = 0.95,
                        max_cells: int = DEFAULT_MAX_CELLS,
                        stream: np.random.SeedSequence | None = None) -> BootstrapIntervals:
    """Percentile intervals for accuracy, ECE (both binnings), Brier and AUROC.

    ``stream`` overrides ``seed`` as the generator's seed sequence (to give groups independent
    streams derived from one seed); ``seed`` is still what the result reports.
    """
    m = check_bins(bins)
    c, y = as_pairs(conf, correct)
    return intervals_of_sorted(Sorted.of(c, y), m, resamples=resamples, seed=seed, level=level,
                               max_cells=max_cells, stream=stream)


def intervals_of_sorted(s: Sorted, bins: int, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                        level: float = 0.95, max_cells: int = DEFAULT_MAX_CELLS,
                        stream: np.random.SeedSequence | None = None) -> BootstrapIntervals:
    """bootstrap_intervals for validated records already sorted by confidence."""
    _check(resamples, level)
    reps, cells = replicates_of_sorted(s, bins, resamples, stream if stream is not None else seed, max_cells)
    defined = int(np.count_nonzero(~np.isnan(reps.auroc)))

    def ci(values: FloatArray) -> Interval:
        out = percentile_interval(values, level)
        assert out is not None
        return out

    pos_total, neg_total = cells.pos.sum(), cells.neg.sum()
    return BootstrapIntervals(
        resamples=resamples, seed=seed, level=level, cells=cells.size, exact=cells.exact,
        accuracy_ci=ci(reps.accuracy), ece_ci=ci(reps.ece_width), ece_mass_ci=ci(reps.ece_mass),
        brier_ci=ci(reps.brier),
        auroc_ci=percentile_interval(reps.auroc, level) if pos_total > 0 and neg_total > 0 else None,
        auroc_defined=defined,
    )


def analyze_group(conf: ArrayLike, correct: ArrayLike, *, bins: int = 10, resamples: int = DEFAULT_RESAMPLES,
                  seed: int = DEFAULT_SEED, level: float = 0.95, max_cells: int = DEFAULT_MAX_CELLS,
                  stream: np.random.SeedSequence | None = None) -> tuple[CalibrationMetrics, BootstrapIntervals]:
    """All metrics and their bootstrap intervals for one group, sorting the records once."""
    m = check_bins(bins)
    c, y = as_pairs(conf, correct)
    s = Sorted.of(c, y)
    return metrics_of_sorted(s, m), intervals_of_sorted(s, m, resamples=resamples, seed=seed, level=level,
                                                        max_cells=max_cells, stream=stream)


def direct_metrics(conf: FloatArray, correct: FloatArray, bins: int) -> dict[Metric, float]:
    """The bootstrapped metrics computed straight from records (no cells)."""
    s = Sorted.of(conf, correct)
    wt, mt = width_table(conf, correct, bins), mass_table(s, bins)
    a = auroc(s)
    return {
        "accuracy": float(correct.mean()),
        "ece": float(np.abs(wt.conf_sum - wt.correct_sum).sum() / conf.size),
        "ece_mass": float(np.abs(mt.conf_sum - mt.correct_sum).sum() / conf.size),
        "brier": float(np.mean((conf - correct) ** 2)),
        "auroc": float("nan") if a is None else a,
    }


def exact_bootstrap(conf: ArrayLike, correct: ArrayLike, *, bins: int = 10, resamples: int = DEFAULT_RESAMPLES,
                    seed: int = DEFAULT_SEED) -> dict[Metric, FloatArray]:
    """Reference: a plain loop over full resamples of the records (slow; for checks and benchmarks)."""
    m = check_bins(bins)
    c, y = as_pairs(conf, correct)
    rng = np.random.default_rng(seed)
    out: dict[Metric, list[float]] = {k: [] for k in METRICS}
    for _ in range(resamples):
        idx = rng.integers(0, c.size, c.size)
        for k, v in direct_metrics(c[idx], y[idx], m).items():
            out[k].append(v)
    return {k: np.asarray(v) for k, v in out.items()}


# -- paired -------------------------------------------------------------------------------------

def _pick(metric: Metric) -> Callable[[CountMetrics], FloatArray]:
    field = {"accuracy": "accuracy", "ece": "ece_width", "ece_mass": "ece_mass",
             "brier": "brier", "auroc": "auroc"}[metric]
    return lambda cm: np.asarray(getattr(cm, field), dtype=np.float64)


class _PairedSide:
    """One group restricted to shared items: records sorted by confidence, cells, item of each record."""

    def __init__(self, item_index: IntArray, conf: FloatArray, correct: FloatArray, bins: int) -> None:
        order = np.argsort(conf, kind="stable")
        self.item = item_index[order]
        self.correct = correct[order]
        s = Sorted(conf=conf[order], correct=self.correct)
        self.cells = build_cells(s, bins, max_cells=s.n)  # exact: one cell per distinct value
        self.direct = direct_metrics(s.conf, s.correct, bins)

    def metrics(self, weights: FloatArray) -> CountMetrics:
        w = weights[:, self.item]
        pos = np.add.reduceat(w * self.correct, self.cells.record_starts, axis=1)
        neg = np.add.reduceat(w * (1.0 - self.correct), self.cells.record_starts, axis=1)
        return metrics_from_counts(self.cells, pos, neg)


def paired_bootstrap(items_a: ArrayLike, conf_a: ArrayLike, correct_a: ArrayLike,
                     items_b: ArrayLike, conf_b: ArrayLike, correct_b: ArrayLike, *,
                     metric: Metric = "ece", bins: int = 10, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED, level: float = 0.95) -> PairedDifference:
    """Paired bootstrap of metric(a) − metric(b) over the items both groups have records for.

    Items are drawn with replacement and each drawn item brings all its records in both groups
    (several samples per item stay together), so item difficulty cancels out of the difference.
    """
    _check(resamples, level)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)} (got {metric!r})")
    m = check_bins(bins)
    ca, ya = as_pairs(conf_a, correct_a, allow_empty=True)
    cb, yb = as_pairs(conf_b, correct_b, allow_empty=True)
    ia, ib = np.asarray(items_a), np.asarray(items_b)
    if ia.shape != ca.shape or ib.shape != cb.shape:
        raise ValueError("items must have one entry per record")
    shared = np.intersect1d(ia, ib)
    keep_a, keep_b = np.isin(ia, shared), np.isin(ib, shared)
    empty = PairedDifference(metric=metric, items=int(shared.size), n_a=int(keep_a.sum()), n_b=int(keep_b.sum()),
                             a=None, b=None, difference=None, ci=None, p_value=None, resamples=resamples,
                             defined=0, seed=seed)
    if shared.size == 0:
        return empty
    side_a = _PairedSide(np.searchsorted(shared, ia[keep_a]), ca[keep_a], ya[keep_a], m)
    side_b = _PairedSide(np.searchsorted(shared, ib[keep_b]), cb[keep_b], yb[keep_b], m)
    va, vb = side_a.direct[metric], side_b.direct[metric]
    if np.isnan(va) or np.isnan(vb):
        return empty.model_copy(update={"a": None if np.isnan(va) else va, "b": None if np.isnan(vb) else vb})
    pick = _pick(metric)
    rng = np.random.default_rng(seed)
    n_items = int(shared.size)
    diffs: list[FloatArray] = []
    width = max(side_a.item.size, side_b.item.size, n_items)
    for rows in _chunks(resamples, width):
        drawn = rng.integers(0, n_items, size=(rows, n_items))
        flat = (drawn + np.arange(rows)[:, None] * n_items).ravel()
        weights = np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items).astype(np.float64)
        diffs.append(pick(side_a.metrics(weights)) - pick(side_b.metrics(weights)))
    d = np.concatenate(diffs)
    d = d[~np.isnan(d)]
    p = None
    if d.size:
        below, above = np.count_nonzero(d <= 0), np.count_nonzero(d >= 0)
        p = float(min(1.0, 2.0 * min(1 + below, 1 + above) / (d.size + 1)))
    return empty.model_copy(update={
        "a": va, "b": vb, "difference": va - vb, "ci": percentile_interval(d, level), "p_value": p,
        "defined": int(d.size),
    })


def item_bootstrap_intervals(items: ArrayLike, conf: ArrayLike, correct: ArrayLike, *, bins: int = 10,
                             resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = 0.95,
                             stream: np.random.SeedSequence | None = None) -> BootstrapIntervals:
    """Percentile bootstrap over items: each drawn item brings all its records.

    For groups whose records are not independent — the variants of one item pooled, or several
    samples of it — resampling records would treat correlated records as separate evidence and
    give intervals that are too narrow; the item is the unit that was sampled.
    """
    _check(resamples, level)
    m = check_bins(bins)
    c, y = as_pairs(conf, correct)
    labels = np.asarray(items)
    if labels.shape != c.shape:
        raise ValueError("items must have one entry per record")
    unique, index = np.unique(labels, return_inverse=True)
    side = _PairedSide(index.astype(np.int64), c, y, m)
    rng = np.random.default_rng(stream if stream is not None else seed)
    n_items = int(unique.size)
    parts: list[CountMetrics] = []
    for rows in _chunks(resamples, max(side.item.size, n_items)):
        drawn = rng.integers(0, n_items, size=(rows, n_items))
        flat = (drawn + np.arange(rows)[:, None] * n_items).ravel()
        weights = np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items).astype(np.float64)
        parts.append(side.metrics(weights))
    reps = _concat(parts)

    def ci(values: FloatArray) -> Interval:
        out = percentile_interval(values, level)
        assert out is not None
        return out

    both = bool(y.any() and (1.0 - y).any())
    return BootstrapIntervals(
        resamples=resamples, seed=seed, level=level, cells=side.cells.size, exact=True, unit="item",
        accuracy_ci=ci(reps.accuracy), ece_ci=ci(reps.ece_width), ece_mass_ci=ci(reps.ece_mass),
        brier_ci=ci(reps.brier), auroc_ci=percentile_interval(reps.auroc, level) if both else None,
        auroc_defined=int(np.count_nonzero(~np.isnan(reps.auroc))),
    )
