"""The HTML report of one run: summary table, a reliability diagram per (model, source), notes for
what a model could not serve, and the run's manifest."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from probe.analysis import POOLED, Binning, GroupReport, RunReport, build_report
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from probe.fileio import write_text_atomic
from probe.record import Record
from probe.reports._groups import sampling_text
from probe.reports._html import render
from probe.reports._notes import anchor, collapse_warnings, no_scores_note, partial_note
from probe.reports._plot import CurveSeries, figure_svg, reliability_figure
from probe.reports._view import Diagram, ManifestRow, Metric, ModelSection, Note, StatusCount, SummaryRow
from probe.storage import RunInfo, Store


class RunPage(BaseModel):
    """Everything report.html.jinja shows."""

    run_id: str = Field(description="Run id.")
    status: str = Field(description="Run state.")
    suites: list[str] = Field(description="Suite names.")
    models: list[str] = Field(description="Models.")
    bins: int = Field(description="Bins M.")
    binning: Binning = Field(description="Binning of ECE and of the diagrams.")
    warnings: list[str] = Field(default_factory=list, description="Shown at the top.")
    summary: list[SummaryRow] = Field(description="Pooled row per model × source, then its variants.")
    sections: list[ModelSection] = Field(description="Diagrams and notes per model.")
    manifest: list[ManifestRow] = Field(description="The run's manifest.")


def variant_order(g: GroupReport, variants: Sequence[str]) -> tuple[bool, int, str]:
    """Pooled first, then the run's variant order (verbal: numeric before linguistic)."""
    base, _, form = g.variant.partition(":")
    rank = variants.index(base) if base in variants else len(variants)
    return (not g.pooled, rank, {"numeric": "0", "linguistic": "1"}.get(form, form))


def summary_row(g: GroupReport) -> SummaryRow:
    return SummaryRow(
        model=g.model, source=g.source, variant=None if g.pooled else g.variant, n=g.n, n_ok=g.n_ok,
        accuracy=Metric(value=g.accuracy, ci=g.accuracy_ci), ece=Metric(value=g.ece, ci=g.ece_ci),
        ece_if_calibrated=Metric(value=g.ece_width_if_calibrated),
        signed_ece=Metric(value=g.signed_ece), brier=Metric(value=g.brier, ci=g.brier_ci),
        auroc=Metric(value=g.auroc, ci=g.auroc_ci),
        not_ok=[StatusCount(status=k, count=v) for k, v in g.status_counts.items() if k != "ok"]
        + ([StatusCount(status="ok without confidence or grade", count=g.n_ok_unscored)] if g.n_ok_unscored else []),
    )


def diagram(title: str, key: str, series: Sequence[CurveSeries], notes: list[str]) -> Diagram:
    fig = reliability_figure(title, series)
    return Diagram(key=key, title=title, svg=figure_svg(fig, key), series=[s.label for s in series], notes=notes)


def _section(rep: RunReport, model: str, sources: list[str], reported: str | None,
             rep_variants: Sequence[str]) -> ModelSection:
    diagrams: list[Diagram] = []
    notes: list[Note] = []
    groups = [g for g in rep.groups if g.model == model]
    for source in sources:
        pooled = next((g for g in groups if g.source == source and g.pooled), None)
        if pooled is None or pooled.n_ok == 0:
            counts = pooled.status_counts if pooled else {}
            notes.append(Note(model=model, source=source, text=no_scores_note(source, counts)))
            continue
        variants = sorted((g for g in groups if g.source == source and not g.pooled and g.n_ok > 0),
                          key=lambda g: variant_order(g, rep_variants))
        drawn = ([pooled] if len(variants) > 1 else []) + variants
        series = [CurveSeries(label=f"{'all variants' if g.pooled else g.variant} (n={g.n_ok})", pooled=g.pooled,
                              bins=g.bins_width if rep.binning == "width" else g.bins_mass) for g in drawn]
        extra = [n for n in [partial_note(pooled.n, pooled.status_counts)] if n]
        diagrams.append(diagram(f"{model} · {source}", anchor(model, source), series, extra))
    return ModelSection(model=model, reported_id=reported, diagrams=diagrams, notes=notes)


def _when(t: datetime | None) -> str:
    return "—" if t is None else t.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def manifest_rows(info: RunInfo, rep: RunReport, n_records: int) -> list[ManifestRow]:
    rows = [
        ("run id", info.run_id), ("status", info.status + (f" ({info.message})" if info.message else "")),
        ("created", _when(info.created_at)), ("started", _when(info.started_at)),
        ("finished", _when(info.finished_at)),
    ]
    if info.started_at and info.finished_at:
        rows.append(("duration", f"{(info.finished_at - info.started_at).total_seconds():.1f} s"))
    for s in info.suites:
        rows.append(("suite", f"{s.name} {s.version} · fingerprint {s.fingerprint}"
                     + (f" · {s.questions} questions" if s.questions else "")))
    for m in info.models:
        rows.append(("model", f"{m} → API reported: {info.model_ids.get(m) or 'nothing reported'}"))
    rows += [
        ("sources", ", ".join(info.sources) or "—"), ("variants", ", ".join(info.variants) or "—"),
        ("sampling", sampling_text(info.sampling)), ("consistency samples", str(info.samples)),
        ("question limit", "none" if info.limit is None else str(info.limit)),
        ("records", f"{n_records} stored of {info.planned_records} planned" if info.planned_records
         else f"{n_records} stored"),
        ("probe version (run)", info.probe_version or "—"),
        ("analysis", f"{rep.bins} {rep.binning} bins; {rep.level:.0%} bootstrap intervals, "
                     f"B = {rep.resamples}, seed {rep.seed}; probe {rep.probe_version}"),
    ]
    return [ManifestRow(label=k, value=v) for k, v in rows]


def _reported(info: RunInfo, rep: RunReport, model: str) -> str | None:
    if info.model_ids.get(model):
        return info.model_ids[model]
    ids = sorted({i for g in rep.groups if g.model == model and g.pooled for i in g.model_reported})
    return ", ".join(ids) or None


def run_page(info: RunInfo, rep: RunReport, n_records: int) -> RunPage:
    """Assemble the page (renders every diagram)."""
    models = list(dict.fromkeys([*info.models, *(g.model for g in rep.groups)]))
    sources = list(dict.fromkeys([*info.sources, *(g.source for g in rep.groups)]))
    summary: list[SummaryRow] = []
    for model in models:
        for source in sources:
            gs = [g for g in rep.groups if g.model == model and g.source == source]
            summary += [summary_row(g) for g in sorted(gs, key=lambda g: variant_order(g, info.variants))]
    warnings = collapse_warnings(list(rep.warnings))
    if info.status != "completed":
        warnings.insert(0, f"run is {info.status}: figures cover the {n_records} records stored so far")
    return RunPage(
        run_id=info.run_id, status=info.status, suites=[s.name for s in info.suites] or rep.suites,
        models=models, bins=rep.bins, binning=rep.binning, warnings=warnings, summary=summary,
        sections=[_section(rep, m, sources, _reported(info, rep, m), info.variants) for m in models],
        manifest=manifest_rows(info, rep, n_records),
    )


def render_run_report(info: RunInfo, records: list[Record], *, report: RunReport | None = None, bins: int = 10,
                      binning: Binning = "width", resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> str:
    """The self-contained HTML report of a run, as text (``report``: an already built analysis of these
    records; otherwise it is built with the given options)."""
    rep = report or build_report(info, records, bins=bins, binning=binning, resamples=resamples, seed=seed)
    return render("report.html.jinja", page=run_page(info, rep, len(records)))


def write_html_report(store: Store, run_id: str, path: Path, *, bins: int = 10, binning: Binning = "width",
                      resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Path:
    """Write the run's HTML report to ``path`` (run id or unique prefix); returns the path.

    Raises KeyError for an unknown run.
    """
    info = store.find_run(run_id)
    html = render_run_report(info, store.records(info.run_id), bins=bins, binning=binning,
                             resamples=resamples, seed=seed)
    return write_text_atomic(Path(path), html)


__all__ = ["POOLED", "RunPage", "render_run_report", "run_page", "write_html_report"]
