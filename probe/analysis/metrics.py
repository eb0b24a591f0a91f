"""Calibration metrics for one group of (confidence, correct) pairs. Pure numpy, no IO.

Definitions follow shared/calibration.md. Binned metrics exist for both binnings; ACE is always
over equal-mass bins, the Brier decomposition always over equal-width bins.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from probe.analysis._arrays import ArrayLike, FloatArray, Sorted, as_pairs, check_bins, width_index, wsum
from probe.analysis.curves import Binning, BinTable, ReliabilityBin, mass_table, width_table
from probe.analysis.ranking import CoveragePoint, aurc, auroc, coverage_curve, selective_accuracy

NLL_CLIP = 1e-12


class BinnedErrors(BaseModel):
    """Calibration errors computed over one binning."""

    model_config = ConfigDict(frozen=True)

    ece: float = Field(description="Σ_b (n_b/N)·|acc_b − conf_b| over non-empty bins.")
    signed_ece: float = Field(description="Σ_b (n_b/N)·(conf_b − acc_b); positive = overconfident.")
    mce: float = Field(description="max_b |acc_b − conf_b| over non-empty bins.")
    rms_ce: float = Field(description="sqrt(Σ_b (n_b/N)·(acc_b − conf_b)²).")
    mean_abs_gap: float = Field(description="Unweighted mean of |acc_b − conf_b| over non-empty bins "
                                            "(ACE when the bins are equal-mass).")


class BrierDecomposition(BaseModel):
    """Murphy's decomposition over the equal-width bins.

    reliability − resolution + uncertainty is exactly the Brier score of the *binned* forecast
    (each confidence replaced by its bin's mean confidence); ``residual`` is what the within-bin
    spread of confidence adds: brier = reliability − resolution + uncertainty + residual.
    """

    model_config = ConfigDict(frozen=True)

    reliability: float = Field(description="Σ_b (n_b/N)·(conf_b − acc_b)² (lower is better).")
    resolution: float = Field(description="Σ_b (n_b/N)·(acc_b − acc)² (higher is better).")
    uncertainty: float = Field(description="acc·(1 − acc).")
    residual: float = Field(description="brier − (reliability − resolution + uncertainty): within-bin terms; "
                                        "the decomposition is exact only for the binned forecast.")


class CalibrationMetrics(BaseModel):
    """Every metric of one group."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="Records scored.")
    bins: int = Field(description="Number of bins M used for both binnings.")
    accuracy: float = Field(description="mean(correct).")
    mean_confidence: float = Field(description="mean(confidence).")
    width: BinnedErrors = Field(description="Errors over equal-width bins.")
    mass: BinnedErrors = Field(description="Errors over equal-mass bins.")
    ace: float = Field(description="Mean over non-empty equal-mass bins of |acc_b − conf_b|.")
    ece_width_if_calibrated: float = Field(
        description="Equal-width ECE a perfectly calibrated model with these confidences would show on "
                    "average from sampling noise alone: Σ_b (n_b/N)·sqrt(2/π)·sqrt(Σ_i c_i(1−c_i))/n_b "
                    "(per bin, accuracy minus mean confidence taken as normal with that spread). ECE is "
                    "biased upwards: compare an observed ECE with this, not with 0.")
    brier: float = Field(description="mean((conf − correct)²).")
    brier_decomposition: BrierDecomposition = Field(description="Murphy decomposition (equal-width bins).")
    nll: float = Field(description=f"Negative log-likelihood with p clipped to [{NLL_CLIP:g}, 1 − {NLL_CLIP:g}].")
    auroc: float | None = Field(description="P(conf of a correct > conf of a wrong), ties half; "
                                            "null when all are correct or all wrong.")
    selective_accuracy_50: float = Field(description="Accuracy of the most confident 50 % of records.")
    aurc: float = Field(description="Area under the risk–coverage curve (mean selective risk over k = 1..N).")
    coverage_curve: list[CoveragePoint] = Field(description="Accuracy–coverage curve at coverage 0.05 … 1.")
    bins_width: list[ReliabilityBin] = Field(description="Equal-width reliability curve.")
    bins_mass: list[ReliabilityBin] = Field(description="Equal-mass reliability curve.")

    def errors(self, binning: Binning) -> BinnedErrors:
        return self.width if binning == "width" else self.mass

    def curve(self, binning: Binning) -> list[ReliabilityBin]:
        return self.bins_width if binning == "width" else self.bins_mass


def binned_errors(table: BinTable) -> BinnedErrors:
    gap = table.gaps()
    w = table.weights()
    return BinnedErrors(
        ece=float(np.sum(w * np.abs(gap))),
        signed_ece=float(np.sum(w * gap)),
        mce=float(np.max(np.abs(gap))),
        rms_ce=float(np.sqrt(np.sum(w * gap * gap))),
        mean_abs_gap=float(np.mean(np.abs(gap))),
    )


def brier_decomposition(table: BinTable, brier: float) -> BrierDecomposition:
    ne = table.n > 0
    w = table.weights()
    acc_b = table.correct_sum[ne] / table.n[ne]
    conf_b = table.conf_sum[ne] / table.n[ne]
    acc = float(table.correct_sum.sum() / table.total)
    rel = float(np.sum(w * (conf_b - acc_b) ** 2))
    res = float(np.sum(w * (acc_b - acc) ** 2))
    unc = acc * (1.0 - acc)
    return BrierDecomposition(reliability=rel, resolution=res, uncertainty=unc, residual=brier - (rel - res + unc))


def nll(conf: ArrayLike, correct: ArrayLike) -> float:
    """−mean(y·log p + (1 − y)·log(1 − p)), p clipped to [1e-12, 1 − 1e-12]."""
    c, y = as_pairs(conf, correct)
    return _nll(c, y)


def _nll(c: FloatArray, y: FloatArray) -> float:
    p = np.clip(c, NLL_CLIP, 1.0 - NLL_CLIP)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


def calibration_metrics(conf: ArrayLike, correct: ArrayLike, bins: int = 10) -> CalibrationMetrics:
    """All metrics of one group. Raises ValueError on empty, NaN or out-of-range input."""
    m = check_bins(bins)
    c, y = as_pairs(conf, correct)
    return metrics_of_sorted(Sorted.of(c, y), m)


def ece_if_calibrated(conf: FloatArray, bins: int) -> float:
    """Expected equal-width ECE under perfect calibration (see CalibrationMetrics); vectorized."""
    idx = width_index(conf, bins)
    n = np.bincount(idx, minlength=bins)
    spread = wsum(idx, conf * (1.0 - conf), bins)
    ne = n > 0
    return float(np.sum(np.sqrt(spread[ne]) / conf.size) * math.sqrt(2.0 / math.pi))


def metrics_of_sorted(s: Sorted, bins: int) -> CalibrationMetrics:
    """All metrics of validated records already sorted by confidence (one sort serves everything)."""
    c, y = s.conf, s.correct
    wt = width_table(c, y, bins)
    mt = mass_table(s, bins)
    brier = float(np.mean((c - y) ** 2))
    mass = binned_errors(mt)
    return CalibrationMetrics(
        n=s.n, bins=bins,
        accuracy=float(y.mean()), mean_confidence=float(c.mean()),
        width=binned_errors(wt), mass=mass, ace=mass.mean_abs_gap,
        ece_width_if_calibrated=ece_if_calibrated(c, bins),
        brier=brier, brier_decomposition=brier_decomposition(wt, brier),
        nll=_nll(c, y), auroc=auroc(s),
        selective_accuracy_50=selective_accuracy(s, 0.5), aurc=aurc(s),
        coverage_curve=coverage_curve(s),
        bins_width=wt.to_models(), bins_mass=mt.to_models(),
    )
