"""Analysis: reliability curves, calibration metrics, bootstrap intervals, paired comparisons and
held-out recalibration. Pure (arrays or records in, pydantic values out); no IO.

Conventions and definitions: shared/calibration.md.
"""

from probe.analysis.bootstrap import (
    BootstrapIntervals,
    PairedDifference,
    analyze_group,
    bootstrap_intervals,
    exact_bootstrap,
    paired_bootstrap,
)
from probe.analysis.curves import Binning, ReliabilityBin, wilson
from probe.analysis.metrics import (
    NLL_CLIP,
    BinnedErrors,
    BrierDecomposition,
    CalibrationMetrics,
    calibration_metrics,
)
from probe.analysis.ranking import CoveragePoint
from probe.analysis.recalibration import (
    METHODS,
    Calibrator,
    FittedOn,
    HeldOutResult,
    HeldOutScores,
    Method,
    apply_temperature_options,
    evaluate,
    fit,
    fit_histogram,
    fit_isotonic,
    fit_platt,
    fit_temperature,
    fit_temperature_options,
    kfold_assign,
    stratified_split,
)
from probe.analysis.report import POOLED, GroupReport, RunReport, build_report, scored_arrays, select_records

__all__ = [
    "METHODS",
    "NLL_CLIP",
    "POOLED",
    "BinnedErrors",
    "Binning",
    "BootstrapIntervals",
    "BrierDecomposition",
    "CalibrationMetrics",
    "Calibrator",
    "CoveragePoint",
    "FittedOn",
    "GroupReport",
    "HeldOutResult",
    "HeldOutScores",
    "Method",
    "PairedDifference",
    "ReliabilityBin",
    "RunReport",
    "analyze_group",
    "apply_temperature_options",
    "bootstrap_intervals",
    "build_report",
    "calibration_metrics",
    "evaluate",
    "exact_bootstrap",
    "fit",
    "fit_histogram",
    "fit_isotonic",
    "fit_platt",
    "fit_temperature",
    "fit_temperature_options",
    "kfold_assign",
    "paired_bootstrap",
    "scored_arrays",
    "select_records",
    "stratified_split",
    "wilson",
]
