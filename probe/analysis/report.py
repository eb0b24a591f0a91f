"""A run's report: one reliability curve and metric set per (model, source, variant), plus one
pooled over variants per (model, source). Pure: records in, a pydantic value out."""

from __future__ import annotations

import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field

from probe import __version__
from probe.analysis._arrays import FloatArray
from probe.analysis.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    analyze_group,
    item_bootstrap_intervals,
)
from probe.analysis.curves import SPARSE_BELOW, Binning, ReliabilityBin
from probe.analysis.metrics import NLL_CLIP, BrierDecomposition, calibration_metrics
from probe.analysis.ranking import CoveragePoint
from probe.record import SOURCES, Record, Sampling
from probe.storage import RunInfo

POOLED = "*"

DEFINITIONS: dict[str, str] = {
    "bins_width": "equal-width bin index min(floor(conf*M), M-1): bin k is [k/M, (k+1)/M), the last bin closed",
    "bins_mass": "records sorted stably by confidence, split into M contiguous bins whose sizes differ "
                 "by at most one (numpy.array_split); lo/hi are the smallest/largest confidence in the bin",
    "sparse": f"a bin with n < {SPARSE_BELOW}: decoration, not evidence",
    "accuracy_ci (bin)": "95 % Wilson interval",
    "ece": "sum_b (n_b/N)|acc_b - conf_b| over non-empty bins of the report's binning; "
           "ece_width and ece_mass give both binnings",
    "ece_width_if_calibrated": "equal-width ECE a perfectly calibrated model with these confidences shows "
                               "on average from sampling noise alone: sum_b (n_b/N) sqrt(2/pi) "
                               "sqrt(sum_i c_i(1-c_i))/n_b (normal approximation per bin); ECE is biased "
                               "upwards, so read an observed ECE against this floor, not against 0; it "
                               "assumes independent records, so where records share items (the pooled "
                               "group) the real floor is higher",
    "signed_ece": "sum_b (n_b/N)(conf_b - acc_b) over the report's binning: positive = overconfident",
    "mce": "max_b |acc_b - conf_b| over non-empty bins of the report's binning",
    "rms_ce": "sqrt(sum_b (n_b/N)(acc_b - conf_b)^2) over the report's binning",
    "ace": "mean over non-empty equal-mass bins of |acc_b - conf_b|",
    "brier": "mean((conf - correct)^2); brier_decomposition is Murphy's reliability - resolution + "
             "uncertainty over the equal-width bins, exact only for the binned forecast (residual = rest)",
    "nll": f"-mean(y log p + (1-y) log(1-p)) with p clipped to [{NLL_CLIP:g}, 1-{NLL_CLIP:g}]",
    "auroc": "P(conf of a random correct > conf of a random wrong), ties count half; "
             "null when all answers are correct or all wrong",
    "selective_accuracy_50": "accuracy of the most confident 50 % of records (a tie group at the cut-off "
                             "counts in proportion)",
    "aurc": "area under the risk-coverage curve: mean over k = 1..N of 1 - accuracy of the top k",
    "intervals": "percentile bootstrap over records (multinomial cell counts; exact resampling "
                 "distribution when a group has at most 2048 distinct confidences); over items instead "
                 "(each drawn item brings all its records) when records share items, as in the pooled "
                 "group or with several samples per item, since such records are not independent",
    "status_counts": "all records of the group by status; only 'ok' records with a confidence and a "
                     "grade are scored (n_ok); errors are never graded as wrong answers",
    "variant '*'": "pooled over all variants of the (model, source)",
}


class GroupReport(BaseModel):
    """Curve and metrics of one (model, source, variant); metrics are null when undefined."""

    model: str = Field(description="provider/model as asked for.")
    source: str = Field(description="Confidence source.")
    variant: str = Field(description=f"Prompt variant ('{POOLED}' = pooled over variants).")
    pooled: bool = Field(description="True for the group pooled over variants.")
    n: int = Field(description="All records of the group, any status.")
    n_ok: int = Field(description="Records scored: status ok with a confidence and a grade.")
    n_ok_unscored: int = Field(default=0, description="Records with status ok but no confidence or grade.")
    status_counts: dict[str, int] = Field(description="Records by status.")
    items: int = Field(description="Distinct (suite, item) among the scored records.")
    suites: list[str] = Field(description="Suites the group's records come from.")
    model_reported: list[str] = Field(default_factory=list, description="Model ids the API reported.")
    accuracy: float | None = Field(default=None, description="mean(correct).")
    accuracy_ci: Interval | None = Field(default=None, description="Bootstrap interval of accuracy.")
    mean_confidence: float | None = Field(default=None, description="mean(confidence).")
    ece: float | None = Field(default=None, description="ECE over the report's binning.")
    ece_ci: Interval | None = Field(default=None, description="Bootstrap interval of ece.")
    ece_width: float | None = Field(default=None, description="ECE over equal-width bins.")
    ece_width_ci: Interval | None = Field(default=None, description="Bootstrap interval of ece_width.")
    ece_mass: float | None = Field(default=None, description="ECE over equal-mass bins.")
    ece_mass_ci: Interval | None = Field(default=None, description="Bootstrap interval of ece_mass.")
    ece_width_if_calibrated: float | None = Field(
        default=None, description="Equal-width ECE a perfectly calibrated model with these confidences and "
                                  "this n would show on average from noise alone (the floor to compare with; "
                                  "it assumes independent records, so it is low for the pooled group).")
    signed_ece: float | None = Field(default=None, description="Signed ECE (positive = overconfident).")
    mce: float | None = Field(default=None, description="Maximum calibration error.")
    ace: float | None = Field(default=None, description="Adaptive calibration error (equal-mass).")
    rms_ce: float | None = Field(default=None, description="Root-mean-square calibration error.")
    brier: float | None = Field(default=None, description="Brier score.")
    brier_ci: Interval | None = Field(default=None, description="Bootstrap interval of brier.")
    brier_decomposition: BrierDecomposition | None = Field(default=None, description="Murphy decomposition.")
    nll: float | None = Field(default=None, description="Negative log-likelihood (clipped, see definitions).")
    auroc: float | None = Field(default=None, description="AUROC; null when all correct or all wrong.")
    auroc_ci: Interval | None = Field(default=None, description="Bootstrap interval of auroc.")
    selective_accuracy_50: float | None = Field(default=None, description="Accuracy of the top 50 %.")
    aurc: float | None = Field(default=None, description="Area under the risk–coverage curve.")
    coverage_curve: list[CoveragePoint] = Field(default_factory=list, description="Accuracy–coverage curve.")
    bins_width: list[ReliabilityBin] = Field(default_factory=list, description="Equal-width curve.")
    bins_mass: list[ReliabilityBin] = Field(default_factory=list, description="Equal-mass curve.")
    sampling: list[Sampling] = Field(
        default_factory=list, description="Distinct sampling parameters seen (max_tokens aside: it only truncates)."
    )


class RunReport(BaseModel):
    """Everything the analysis says about one run."""

    run_id: str = Field(description="Run id.")
    status: str = Field(description="The run's life-cycle state when the report was made.")
    created_at: datetime = Field(description="When the run was created.")
    suites: list[str] = Field(description="Suite names of the run.")
    models: list[str] = Field(description="Models of the run.")
    bins: int = Field(description="Bins M for both binnings.")
    binning: Binning = Field(description="Binning behind ece, signed_ece, mce, rms_ce and ece_ci.")
    resamples: int = Field(description="Bootstrap resamples per interval.")
    seed: int = Field(description="Bootstrap seed (each group draws from its own stream derived from it).")
    level: float = Field(description="Interval coverage.")
    probe_version: str = Field(default=__version__, description="probe version that made the report.")
    groups: list[GroupReport] = Field(description="One entry per (model, source, variant) and pooled.")
    warnings: list[str] = Field(default_factory=list, description="Things a reader must know.")
    definitions: dict[str, str] = Field(default_factory=lambda: dict(DEFINITIONS),
                                        description="How each figure is defined.")

    def group(self, model: str, source: str, variant: str = POOLED) -> GroupReport:
        for g in self.groups:
            if (g.model, g.source, g.variant) == (model, source, variant):
                return g
        raise KeyError(f"no group {model} / {source} / {variant}")


@dataclass
class _Collect:
    """Records of one group, gathered in one pass."""

    statuses: Counter[str] = field(default_factory=Counter)
    conf: list[float] = field(default_factory=list)
    correct: list[bool] = field(default_factory=list)
    items: set[tuple[str, str]] = field(default_factory=set)
    item_of: list[str] = field(default_factory=list)  # per scored record: its suite and item
    suites: set[str] = field(default_factory=set)
    reported: set[str] = field(default_factory=set)
    sampling: set[Sampling] = field(default_factory=set)
    unscored_ok: int = 0

    def add(self, r: Record) -> None:
        self.statuses[r.status] += 1
        self.suites.add(r.suite)
        # max_tokens only truncates (mc answers get fewer than short ones): it does not change the
        # distribution confidences come from, so it does not make records incomparable
        self.sampling.add(r.sampling.model_copy(update={"max_tokens": None}))
        if r.model_reported:
            self.reported.add(r.model_reported)
        if r.status != "ok":
            return
        if r.confidence is None or r.correct is None:
            self.unscored_ok += 1
            return
        self.conf.append(r.confidence)
        self.correct.append(r.correct)
        self.items.add((r.suite, r.item_id))
        self.item_of.append(f"{r.suite}\0{r.item_id}")


def scored_arrays(records: Iterable[Record]) -> tuple[FloatArray, FloatArray, list[tuple[str, str, int]]]:
    """(confidence, correct, (suite, item, sample) keys) of the scored records among ``records``."""
    keep = [r for r in records if r.status == "ok" and r.confidence is not None and r.correct is not None]
    conf = np.array([r.confidence for r in keep], dtype=np.float64)
    correct = np.array([r.correct for r in keep], dtype=np.float64)
    return conf, correct, [(r.suite, r.item_id, r.sample) for r in keep]


def _order(key: tuple[str, str, str]) -> tuple[str, int, str, int, str]:
    model, source, variant = key
    rank = SOURCES.index(source) if source in SOURCES else len(SOURCES)
    return (model, rank, source, variant == POOLED, variant)


def _stream(seed: int, key: tuple[str, str, str]) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=(zlib.crc32("\0".join(key).encode()),))


def _group_report(key: tuple[str, str, str], c: _Collect, *, bins: int, binning: Binning, resamples: int,
                  seed: int, level: float) -> GroupReport:
    model, source, variant = key
    base = GroupReport(
        model=model, source=source, variant=variant, pooled=variant == POOLED, n=sum(c.statuses.values()),
        n_ok=len(c.conf), n_ok_unscored=c.unscored_ok, status_counts=dict(sorted(c.statuses.items())),
        items=len(c.items), suites=sorted(c.suites), model_reported=sorted(c.reported),
        sampling=sorted(c.sampling, key=lambda s: s.model_dump_json()),
    )
    if not c.conf:
        return base
    conf = np.asarray(c.conf, dtype=np.float64)
    correct = np.asarray(c.correct, dtype=np.float64)
    if len(c.item_of) > len(c.items):
        # records share items (variants pooled, or several samples): resample items, not records
        m = calibration_metrics(conf, correct, bins=bins)
        ci = item_bootstrap_intervals(np.asarray(c.item_of), conf, correct, bins=bins, resamples=resamples,
                                      seed=seed, level=level, stream=_stream(seed, key))
    else:
        m, ci = analyze_group(conf, correct, bins=bins, resamples=resamples, seed=seed, level=level,
                              stream=_stream(seed, key))
    primary = m.errors(binning)
    return base.model_copy(update={
        "accuracy": m.accuracy, "accuracy_ci": ci.accuracy_ci, "mean_confidence": m.mean_confidence,
        "ece": primary.ece, "ece_ci": ci.ece_ci if binning == "width" else ci.ece_mass_ci,
        "ece_width": m.width.ece, "ece_width_ci": ci.ece_ci,
        "ece_mass": m.mass.ece, "ece_mass_ci": ci.ece_mass_ci,
        "ece_width_if_calibrated": m.ece_width_if_calibrated,
        "signed_ece": primary.signed_ece, "mce": primary.mce, "ace": m.ace, "rms_ce": primary.rms_ce,
        "brier": m.brier, "brier_ci": ci.brier_ci, "brier_decomposition": m.brier_decomposition,
        "nll": m.nll, "auroc": m.auroc, "auroc_ci": ci.auroc_ci if m.auroc is not None else None,
        "selective_accuracy_50": m.selective_accuracy_50, "aurc": m.aurc, "coverage_curve": m.coverage_curve,
        "bins_width": m.bins_width, "bins_mass": m.bins_mass,
    })


def select_records(records: Iterable[Record], model: str, source: str, variant: str = POOLED) -> list[Record]:
    """The records of one group ('*' = every variant of the model and source)."""
    return [r for r in records if r.model == model and r.source == source
            and (variant == POOLED or r.variant == variant)]


def build_report(run: RunInfo, records: list[Record], bins: int = 10, binning: Binning = "width", *,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = 0.95) -> RunReport:
    """Curves, metrics and bootstrap intervals for every group of a run's records."""
    if binning not in ("width", "mass"):
        raise ValueError(f"binning must be 'width' or 'mass' (got {binning!r})")
    foreign = {r.run_id for r in records} - {run.run_id}
    if foreign:
        raise ValueError(f"records of other runs passed for run {run.run_id}: {', '.join(sorted(foreign))}")
    collected: dict[tuple[str, str, str], _Collect] = defaultdict(_Collect)
    for r in records:
        collected[(r.model, r.source, r.variant)].add(r)
        collected[(r.model, r.source, POOLED)].add(r)
    groups = [_group_report(k, collected[k], bins=bins, binning=binning, resamples=resamples, seed=seed,
                            level=level) for k in sorted(collected, key=_order)]
    warnings: list[str] = []
    for g in groups:
        label = f"{g.model} / {g.source} / {g.variant}"
        if len(g.sampling) > 1 and not g.pooled:
            warnings.append(f"{label}: records were made with {len(g.sampling)} different sampling settings; "
                            "their confidences are not strictly comparable")
        if g.n_ok_unscored and not g.pooled:
            warnings.append(f"{label}: {g.n_ok_unscored} record(s) with status ok lack a confidence or a "
                            "grade and were not scored")
    if not records:
        warnings.append("the run has no records yet")
    suites = [s.name for s in run.suites] or sorted({r.suite for r in records})
    return RunReport(run_id=run.run_id, status=run.status, created_at=run.created_at, suites=suites,
                     models=list(run.models) or sorted({r.model for r in records}), bins=bins, binning=binning,
                     resamples=resamples, seed=seed, level=level, groups=groups, warnings=warnings)
