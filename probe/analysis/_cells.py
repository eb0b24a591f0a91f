"""Records compressed into cells of sufficient statistics, and metrics from per-cell counts.

A cell is a run of records with neighbouring confidence, split by correctness. When a group has
at most ``max_cells`` distinct confidence values, every distinct value is its own cell and the
representation is exact: a bootstrap resample of records is then exactly a multinomial draw of
cell counts, and accuracy, equal-width ECE, Brier and AUROC computed from those counts equal the
values on the resampled records. With more distinct values, consecutive values are pooled into
about ``max_cells`` cells by rank (never splitting a tie group or an equal-width bin); a cell
then stands for its records through their mean confidence, mean Brier term and the share of its
own (correct, wrong) pairs that are ordered correctly, so the figures are exact in expectation
and the cell width (about 1/max_cells of the records) bounds the rest.

Equal-mass bins of a resample are cut at the ``array_split`` positions of the resampled,
sorted records; a cell straddling a cut is split in proportion (ties in a resample come in
random order, so this is their expected split).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probe.analysis._arrays import FloatArray, IntArray, Sorted, width_index, wsum

DEFAULT_MAX_CELLS = 2048


@dataclass(frozen=True)
class CellSet:
    """Cells in increasing confidence; per cell the statistics of its correct and wrong records."""

    bins: int
    exact: bool  # every cell is one distinct confidence value
    pos: FloatArray  # correct records per cell
    neg: FloatArray  # wrong records per cell
    conf_pos: FloatArray  # mean confidence of the correct records (0 where none)
    conf_neg: FloatArray
    brier_pos: FloatArray  # mean (conf − 1)² of the correct records
    brier_neg: FloatArray  # mean conf² of the wrong records
    concordance: FloatArray  # share of the cell's own (correct, wrong) pairs ordered right, ties ½
    bin_starts: IntArray  # first cell of each non-empty equal-width bin
    record_starts: IntArray  # first (sorted) record of each cell

    @property
    def size(self) -> int:
        return int(self.pos.size)


def build_cells(s: Sorted, bins: int, max_cells: int = DEFAULT_MAX_CELLS) -> CellSet:
    counts = s.group_counts.astype(np.float64)
    gpos = s.group_correct
    gneg = counts - gpos
    values = s.group_values
    gbin = width_index(values, bins)
    n_groups = values.size
    exact = n_groups <= max_cells
    if exact:
        cell = np.arange(n_groups, dtype=np.int64)
    else:
        before = np.cumsum(s.group_counts) - s.group_counts
        key = gbin * (max_cells + 1) + before * max_cells // s.n
        cell = np.concatenate([[0], np.cumsum(key[1:] != key[:-1])]).astype(np.int64)
    n_cells = int(cell[-1]) + 1
    first_group = np.flatnonzero(np.concatenate([[True], cell[1:] != cell[:-1]]))

    def per_cell(weights: FloatArray) -> FloatArray:
        return wsum(cell, weights, n_cells)

    pos, neg = per_cell(gpos), per_cell(gneg)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf_pos = np.where(pos > 0, per_cell(gpos * values) / pos, 0.0)
        conf_neg = np.where(neg > 0, per_cell(gneg * values) / neg, 0.0)
        brier_pos = np.where(pos > 0, per_cell(gpos * (values - 1.0) ** 2) / pos, 0.0)
        brier_neg = np.where(neg > 0, per_cell(gneg * values**2) / neg, 0.0)
        neg_before = np.cumsum(gneg) - gneg
        neg_below_in_cell = neg_before - neg_before[first_group][cell]
        concord = per_cell(gpos * (neg_below_in_cell + 0.5 * gneg))
        concordance = np.where((pos > 0) & (neg > 0), concord / (pos * neg), 0.5)
    cbin = gbin[first_group]
    bin_starts = np.flatnonzero(np.concatenate([[True], cbin[1:] != cbin[:-1]])).astype(np.int64)
    return CellSet(bins=bins, exact=exact, pos=pos, neg=neg, conf_pos=conf_pos, conf_neg=conf_neg,
                   brier_pos=brier_pos, brier_neg=brier_neg, concordance=concordance,
                   bin_starts=bin_starts, record_starts=s.group_starts[first_group].astype(np.int64))


@dataclass(frozen=True)
class CountMetrics:
    """Metrics per row of a (rows × cells) count matrix."""

    accuracy: FloatArray
    ece_width: FloatArray
    ece_mass: FloatArray
    brier: FloatArray
    auroc: FloatArray  # NaN where undefined (no correct or no wrong records)


def metrics_from_counts(cells: CellSet, pos: FloatArray, neg: FloatArray) -> CountMetrics:
    """Accuracy, ECE (equal-width and equal-mass), Brier and AUROC for each row of counts."""
    rows = pos.shape[0]
    p_tot = pos.sum(axis=1)
    n_tot = neg.sum(axis=1)
    total = p_tot + n_tot
    conf_cell = pos * cells.conf_pos + neg * cells.conf_neg
    bin_conf = np.add.reduceat(conf_cell, cells.bin_starts, axis=1)
    bin_corr = np.add.reduceat(pos, cells.bin_starts, axis=1)
    ece_width = np.abs(bin_conf - bin_corr).sum(axis=1) / total
    brier = (pos @ cells.brier_pos + neg @ cells.brier_neg) / total
    neg_below = np.cumsum(neg, axis=1) - neg
    u = np.sum(pos * (neg_below + cells.concordance * neg), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auroc = np.where((p_tot > 0) & (n_tot > 0), u / (p_tot * n_tot), np.nan)
    ece_mass = _ece_mass(cells.bins, pos + neg, conf_cell, pos, total, rows)
    return CountMetrics(accuracy=p_tot / total, ece_width=ece_width, ece_mass=ece_mass, brier=brier, auroc=auroc)


def _ece_mass(bins: int, count: FloatArray, conf_cell: FloatArray, corr_cell: FloatArray,
              total: FloatArray, rows: int) -> FloatArray:
    n_cells = count.shape[1]
    cum_n = np.cumsum(count, axis=1)
    cum_conf = np.cumsum(conf_cell, axis=1)
    cum_corr = np.cumsum(corr_cell, axis=1)
    # cut positions of array_split over each row's total: j·q + min(j, r), j = 1 … M−1
    q = np.floor(total / bins)
    r = total - q * bins
    j = np.arange(1, bins, dtype=np.float64)
    cuts = j[None, :] * q[:, None] + np.minimum(j[None, :], r[:, None])
    # one searchsorted for all rows: shift row k by k·(max total + 1)
    shift = (np.arange(rows, dtype=np.float64) * (total.max() + 1.0))[:, None]
    flat = np.searchsorted((cum_n + shift).ravel(), (cuts + shift).ravel(), side="left")
    flat = np.minimum(flat, rows * n_cells - 1).reshape(cuts.shape)
    row = np.arange(rows)[:, None]
    cell = flat - row * n_cells
    n_before = cum_n[row, cell] - count[row, cell]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(count[row, cell] > 0, (cuts - n_before) / count[row, cell], 0.0)
    conf_at = cum_conf[row, cell] - conf_cell[row, cell] + frac * conf_cell[row, cell]
    corr_at = cum_corr[row, cell] - corr_cell[row, cell] + frac * corr_cell[row, cell]
    zero = np.zeros((rows, 1))
    conf_edges = np.concatenate([zero, conf_at, cum_conf[:, -1:]], axis=1)
    corr_edges = np.concatenate([zero, corr_at, cum_corr[:, -1:]], axis=1)
    gap = np.diff(conf_edges, axis=1) - np.diff(corr_edges, axis=1)
    return np.asarray(np.abs(gap).sum(axis=1) / total, dtype=np.float64)
