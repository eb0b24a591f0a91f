"""Selecting a group's records and measuring them with probe.analysis (shared by compare and history)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from probe.analysis import Binning, ReliabilityBin, bootstrap_intervals, calibration_metrics
from probe.analysis.bootstrap import Interval
from probe.record import Record, Sampling


class EntryMetrics(BaseModel):
    """One entry's figures on the shared items of a (source, variant)."""

    label: str = Field(description="Entry label.")
    n: int = Field(description="Scored records on the shared items.")
    status_counts: dict[str, int] = Field(default_factory=dict, description="All its records by status.")
    accuracy: float | None = Field(default=None, description="Accuracy.")
    accuracy_ci: Interval | None = Field(default=None, description="Bootstrap interval.")
    ece: float | None = Field(default=None, description="ECE over the comparison's binning.")
    ece_ci: Interval | None = Field(default=None, description="Bootstrap interval.")
    signed_ece: float | None = Field(default=None, description="Signed ECE (positive = overconfident).")
    brier: float | None = Field(default=None, description="Brier score.")
    brier_ci: Interval | None = Field(default=None, description="Bootstrap interval.")
    auroc: float | None = Field(default=None, description="AUROC (null when undefined).")
    auroc_ci: Interval | None = Field(default=None, description="Bootstrap interval.")
    bins: list[ReliabilityBin] = Field(default_factory=list, description="Reliability curve on shared items.")


def item_key(r: Record) -> str:
    return f"{r.suite}\x1f{r.item_id}"


def scored(records: Sequence[Record]) -> list[Record]:
    return [r for r in records if r.status == "ok" and r.confidence is not None and r.correct is not None]


def arrays(records: Sequence[Record]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([item_key(r) for r in records], dtype=object).astype(str),
            np.array([r.confidence for r in records], dtype=np.float64),
            np.array([r.correct for r in records], dtype=np.float64))


def status_counts(records: Sequence[Record]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r.status] = out.get(r.status, 0) + 1
    return dict(sorted(out.items()))


def entry_metrics(label: str, records: list[Record], all_records: list[Record], *, bins: int, binning: Binning,
                   resamples: int, seed: int) -> EntryMetrics:
    base = EntryMetrics(label=label, n=len(records), status_counts=status_counts(all_records))
    if not records:
        return base
    _, conf, correct = arrays(records)
    m = calibration_metrics(conf, correct, bins)
    ci = bootstrap_intervals(conf, correct, bins=bins, resamples=resamples, seed=seed)
    errors = m.errors(binning)
    return base.model_copy(update={
        "accuracy": m.accuracy, "accuracy_ci": ci.accuracy_ci, "ece": errors.ece,
        "ece_ci": ci.ece_ci if binning == "width" else ci.ece_mass_ci, "signed_ece": errors.signed_ece,
        "brier": m.brier, "brier_ci": ci.brier_ci, "auroc": m.auroc,
        "auroc_ci": ci.auroc_ci if m.auroc is not None else None, "bins": m.curve(binning),
    })


def sampling_text(s: Sampling) -> str:
    return ", ".join(f"{k}={v}" for k, v in s.model_dump().items() if v is not None) or "provider defaults"


