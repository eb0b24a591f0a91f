"""A model's figures over time on one suite: every run of the same suite fingerprint, per source,
with intervals, the paired change from the previous run, and which changes are beyond the
intervals (drift). The model id the API reported is kept per run, so a silent vendor update shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from probe.analysis import POOLED, Binning, PairedDifference, paired_bootstrap
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, Metric
from probe.record import SOURCES, Record, Sampling
from probe.reports._groups import EntryMetrics, arrays, entry_metrics, sampling_text, scored
from probe.reports._html import render
from probe.reports._notes import anchor
from probe.reports._plot import TimePoint, figure_svg, history_figure
from probe.reports._view import Diagram
from probe.storage import RunInfo, Store


class HistoryPoint(BaseModel):
    """One run's figures for the model, suite and source."""

    run_id: str = Field(description="Run id.")
    created_at: datetime = Field(description="When the run was created.")
    status: str = Field(description="Run state.")
    reported_ids: list[str] = Field(description="Model ids the API reported in this run.")
    sampling: list[str] = Field(description="Sampling parameters of its records, as text.")
    n: int = Field(description="Records, any status.")
    metrics: EntryMetrics = Field(description="Figures with intervals (over all scored records of the run).")


class Change(BaseModel):
    """Paired change of one metric from the previous run (on the items both runs scored)."""

    metric: str = Field(description="Metric.")
    result: PairedDifference = Field(description="this run − previous run, interval, p-value.")
    drift: bool = Field(description="The interval of the change excludes zero: a change beyond the intervals.")


class Step(BaseModel):
    """What changed between two consecutive runs."""

    run_id: str = Field(description="The later run.")
    previous_run_id: str = Field(description="The run before it.")
    changes: list[Change] = Field(description="Per metric.")
    drift: bool = Field(description="Any metric drifted.")
    model_id_changed: bool = Field(description="The reported model id changed.")
    sampling_changed: bool = Field(description="Sampling parameters changed (figures not strictly comparable).")


class SourceHistory(BaseModel):
    """The history of one source."""

    source: str = Field(description="Confidence source.")
    points: list[HistoryPoint] = Field(description="Runs, oldest first.")
    steps: list[Step] = Field(description="Consecutive-run changes; steps[i] leads to points[i + 1].")


class History(BaseModel):
    """JSON output of ``probe history``."""

    suite: str = Field(description="Suite name.")
    fingerprint: str = Field(description="Suite fingerprint the runs share.")
    model: str = Field(description="provider/model.")
    variant: str = Field(description=f"Prompt variant ('{POOLED}' = pooled).")
    bins: int = Field(description="Bins M.")
    binning: Binning = Field(description="Binning behind ECE.")
    resamples: int = Field(description="Bootstrap resamples.")
    seed: int = Field(description="Bootstrap seed.")
    sources: list[SourceHistory] = Field(description="Per source.")
    skipped: list[str] = Field(default_factory=list, description="Runs of other versions of the suite.")
    warnings: list[str] = Field(default_factory=list, description="Caveats.")


def matching_runs(runs: Sequence[RunInfo], suite: str, model: str,
                  fingerprint: str | None = None) -> tuple[str, list[RunInfo], list[RunInfo]]:
    """(fingerprint, runs with it, runs of other versions), oldest first. Without ``fingerprint`` the
    latest run's version is used; a prefix of a fingerprint is accepted. ValueError when none match."""
    having = sorted((r for r in runs if model in r.models and any(s.name == suite for s in r.suites)),
                    key=lambda r: (r.created_at, r.run_id))
    if not having:
        raise ValueError(f"no run of suite {suite!r} with model {model!r}")

    def fp(r: RunInfo) -> str:
        return next(s.fingerprint for s in r.suites if s.name == suite)

    if fingerprint is None:
        chosen = fp(having[-1])
    else:
        found = sorted({fp(r) for r in having if fp(r).startswith(fingerprint)})
        if len(found) != 1:
            known = ", ".join(sorted({fp(r) for r in having}))
            raise ValueError(f"fingerprint {fingerprint!r} matches {len(found)} version(s) of {suite!r}; "
                             f"known: {known}")
        chosen = found[0]
    return chosen, [r for r in having if fp(r) == chosen], [r for r in having if fp(r) != chosen]


def _point(run: RunInfo, records: list[Record], model: str, *, bins: int, binning: Binning, resamples: int,
           seed: int) -> HistoryPoint:
    reported = sorted({r.model_reported for r in records if r.model_reported}
                      | ({run.model_ids[model]} if run.model_ids.get(model) else set()))
    samplings: set[Sampling] = {r.sampling for r in records}
    return HistoryPoint(run_id=run.run_id, created_at=run.created_at, status=run.status, reported_ids=reported,
                        sampling=sorted(sampling_text(s) for s in samplings), n=len(records),
                        metrics=entry_metrics(run.run_id, scored(records), records, bins=bins, binning=binning,
                                               resamples=resamples, seed=seed))


def _step(prev: HistoryPoint, cur: HistoryPoint, prev_records: list[Record], cur_records: list[Record], *,
          metrics: Sequence[Metric], bins: int, resamples: int, seed: int) -> Step:
    a, b = scored(cur_records), scored(prev_records)
    changes: list[Change] = []
    if a and b:
        for metric in metrics:
            res = paired_bootstrap(*arrays(a), *arrays(b), metric=metric, bins=bins, resamples=resamples,
                                   seed=seed)
            drift = res.ci is not None and (res.ci[0] > 0 or res.ci[1] < 0)
            changes.append(Change(metric=metric, result=res, drift=drift))
    return Step(run_id=cur.run_id, previous_run_id=prev.run_id, changes=changes,
                drift=any(c.drift for c in changes),
                model_id_changed=bool(prev.reported_ids and cur.reported_ids and prev.reported_ids != cur.reported_ids),
                sampling_changed=prev.sampling != cur.sampling)


def build_history(runs: Sequence[RunInfo], records: Sequence[list[Record]], *, suite: str, fingerprint: str,
                  model: str, sources: Sequence[str] | None = None, variant: str = POOLED, bins: int = 10,
                  binning: Binning = "width", resamples: int = DEFAULT_RESAMPLES,
                  seed: int = DEFAULT_SEED) -> History:
    """Pure: ``records[i]`` are run i's records (any model or suite; filtered here)."""
    metrics: list[Metric] = ["accuracy", "ece" if binning == "width" else "ece_mass", "brier", "auroc"]
    mine = [[r for r in rs if r.model == model and r.suite == suite and (variant == POOLED or r.variant == variant)]
            for rs in records]
    present = [s for s in SOURCES if any(r.source == s for rs in mine for r in rs)]
    out: list[SourceHistory] = []
    for source in present if sources is None else [s for s in sources if s in present]:
        per_run = [[r for r in rs if r.source == source] for rs in mine]
        keep = [(run, rs) for run, rs in zip(runs, per_run, strict=True) if rs]
        points = [_point(run, rs, model, bins=bins, binning=binning, resamples=resamples, seed=seed)
                  for run, rs in keep]
        steps = [_step(points[i - 1], points[i], keep[i - 1][1], keep[i][1], metrics=metrics, bins=bins,
                       resamples=resamples, seed=seed) for i in range(1, len(points))]
        out.append(SourceHistory(source=source, points=points, steps=steps))
    warnings: list[str] = []
    if sources is not None:
        warnings += [f"{s}: no records of {model} on {suite}" for s in sources if s not in present]
    if len(runs) < 2:
        warnings.append("only one run: nothing to compare it with yet")
    changed: dict[str, list[str]] = {}
    for sh in out:
        for st in sh.steps:
            if st.model_id_changed:
                prev = next(p for p in sh.points if p.run_id == st.previous_run_id)
                cur = next(p for p in sh.points if p.run_id == st.run_id)
                warnings.append(f"the API reported a different model id in {st.run_id} "
                                f"({', '.join(cur.reported_ids)}) than in {st.previous_run_id} "
                                f"({', '.join(prev.reported_ids)}): the vendor may have updated the model")
            if st.sampling_changed:
                changed.setdefault(st.run_id, []).append(sh.source)
    warnings += [f"sampling parameters changed in {run_id} ({', '.join(srcs)}): figures are not strictly "
                 "comparable with the run before" for run_id, srcs in changed.items()]
    return History(suite=suite, fingerprint=fingerprint, model=model, variant=variant, bins=bins, binning=binning,
                   resamples=resamples, seed=seed, sources=out, warnings=list(dict.fromkeys(warnings)))


def history_from_store(store: Store, *, suite: str, model: str, sources: Sequence[str] | None = None,
                       fingerprint: str | None = None, variant: str = POOLED, bins: int = 10,
                       binning: Binning = "width", resamples: int = DEFAULT_RESAMPLES,
                       seed: int = DEFAULT_SEED) -> History:
    """Load the matching runs and build the history. ValueError when no run matches."""
    fp, runs, others = matching_runs(store.list_runs(), suite, model, fingerprint)
    hist = build_history(runs, [store.records(r.run_id) for r in runs], suite=suite, fingerprint=fp, model=model,
                         sources=sources, variant=variant, bins=bins, binning=binning, resamples=resamples,
                         seed=seed)
    skipped = [f"{r.run_id} ({next(s.fingerprint for s in r.suites if s.name == suite)})" for r in others]
    return hist.model_copy(update={"skipped": skipped})


__all__ = [
    "Change",
    "History",
    "HistoryPoint",
    "SourceHistory",
    "Step",
    "build_history",
    "history_from_store",
    "matching_runs",
    "render_history_html",
]


def _points(s: SourceHistory, metric: str) -> list[TimePoint]:
    out: list[TimePoint] = []
    for i, p in enumerate(s.points):
        step = s.steps[i - 1] if i else None
        m = p.metrics
        value, ci = (m.ece, m.ece_ci) if metric == "ece" else (m.accuracy, m.accuracy_ci)
        drift = step is not None and any(c.drift for c in step.changes if c.metric.startswith(metric))
        out.append(TimePoint(label=f"{p.created_at:%Y-%m-%d} {p.run_id[-6:]}", value=value, ci=ci, drift=drift,
                             model_changed=step is not None and step.model_id_changed))
    return out


def history_diagrams(h: History) -> dict[str, Diagram | None]:
    out: dict[str, Diagram | None] = {}
    for s in h.sources:
        key = anchor("history", h.model, h.suite, s.source)
        fig = history_figure(f"{h.model} · {h.suite} · {s.source}",
                             [(f"ECE ({h.binning})", _points(s, "ece")), ("accuracy", _points(s, "accuracy"))])
        out[s.source] = Diagram(key=key, title=f"{s.source} over {len(s.points)} run(s)", svg=figure_svg(fig, key))
    return out


def render_history_html(h: History) -> str:
    """The history as a self-contained HTML page."""
    return render("history.html.jinja", h=h, diagrams=history_diagrams(h))
