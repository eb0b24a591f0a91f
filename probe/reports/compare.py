"""Models (or runs) side by side on the items they share, per source and variant: metrics with
intervals, paired differences against the first entry, overlaid reliability curves.

Figures come from probe.analysis (calibration_metrics, bootstrap_intervals, paired_bootstrap);
this module only selects the records and arranges the results.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from probe.analysis import (
    POOLED,
    Binning,
    PairedDifference,
    paired_bootstrap,
)
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, Metric
from probe.record import SOURCES, Record
from probe.reports._groups import (
    EntryMetrics,
    arrays,
    entry_metrics,
    item_key,
    sampling_text,
    scored,
    status_counts,
)
from probe.reports._html import render
from probe.reports._notes import anchor, no_scores_note
from probe.reports._plot import CurveSeries
from probe.reports._run import diagram
from probe.reports._view import Diagram
from probe.storage import RunInfo


class Entry(BaseModel):
    """One column of the comparison: a model in a run."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="How the entry is named in tables and legends.")
    run_id: str = Field(description="Run the records come from.")
    model: str = Field(description="provider/model.")
    reported_ids: list[str] = Field(default_factory=list, description="Model ids the API reported.")
    records: int = Field(description="Records of this model in the run, any status.")


class Difference(BaseModel):
    """entry − baseline for one metric, paired over shared items."""

    label: str = Field(description="Entry compared.")
    baseline: str = Field(description="Entry it is compared with (the first one).")
    result: PairedDifference = Field(description="Difference, interval and p-value from the paired bootstrap.")


class ComparisonRow(BaseModel):
    """One (source, variant): every entry's figures and the paired differences."""

    source: str = Field(description="Confidence source.")
    variant: str = Field(description=f"Prompt variant ('{POOLED}' = pooled).")
    items: int = Field(description="Items every entry has a scored record for.")
    entries: list[EntryMetrics] = Field(description="Per entry, in entry order.")
    differences: list[Difference] = Field(default_factory=list, description="Against the first entry.")
    notes: list[str] = Field(default_factory=list, description="Why something is missing.")


class Comparison(BaseModel):
    """The whole comparison (JSON output of ``probe compare``)."""

    entries: list[Entry] = Field(description="What is compared; the first is the baseline.")
    bins: int = Field(description="Bins M.")
    binning: Binning = Field(description="Binning behind ECE and the curves.")
    resamples: int = Field(description="Bootstrap resamples.")
    seed: int = Field(description="Bootstrap seed.")
    metrics: list[str] = Field(description="Metrics with paired differences.")
    rows: list[ComparisonRow] = Field(description="Per source and variant.")
    warnings: list[str] = Field(default_factory=list, description="Sampling differences and other caveats.")


def _select(records: Sequence[Record], source: str, variant: str) -> list[Record]:
    return [r for r in records if r.source == source and (variant == POOLED or r.variant == variant)]


def compare_row(entries: Sequence[Entry], records: Sequence[list[Record]], source: str, variant: str, *,
                bins: int, binning: Binning, resamples: int, seed: int,
                metrics: Sequence[Metric]) -> ComparisonRow:
    """Figures of every entry on the items all of them have scored, and paired differences."""
    selected = [_select(rs, source, variant) for rs in records]
    ok = [scored(rs) for rs in selected]
    shared = set.intersection(*({item_key(r) for r in rs} for rs in ok)) if ok else set()
    kept = [[r for r in rs if item_key(r) in shared] for rs in ok]
    notes = [f"{e.label}: {no_scores_note(source, status_counts(sel))}"
             for e, sel, sc in zip(entries, selected, ok, strict=True) if not sc]
    if not shared and not notes:
        notes.append(f"{source}: the entries have no scored item in common")
    row = ComparisonRow(source=source, variant=variant, items=len(shared), notes=notes, entries=[
        entry_metrics(e.label, k, sel, bins=bins, binning=binning, resamples=resamples, seed=seed)
        for e, k, sel in zip(entries, kept, selected, strict=True)])
    if not shared:
        return row
    base = arrays(kept[0])
    diffs = []
    for e, k in zip(entries[1:], kept[1:], strict=True):
        cur = arrays(k)
        for metric in metrics:
            res = paired_bootstrap(*cur, *base, metric=metric, bins=bins, resamples=resamples, seed=seed)
            diffs.append(Difference(label=e.label, baseline=entries[0].label, result=res))
    return row.model_copy(update={"differences": diffs})


def sampling_warnings(entries: Sequence[Entry], runs: Sequence[RunInfo], records: Sequence[list[Record]]) -> list[str]:
    """A warning per source whose records were made with different sampling parameters, and one when
    the runs' own sampling settings differ."""
    out: list[str] = []
    distinct_runs = list({r.run_id: r for r in runs}.values())
    if len({r.sampling for r in distinct_runs}) > 1:
        out.append("sampling parameters differ between the compared runs ("
                   + "; ".join(f"{r.run_id}: {sampling_text(r.sampling)}" for r in distinct_runs)
                   + "): their confidences are not strictly comparable")
    if out:
        return out  # the runs differ: per-source detail would repeat it
    for source in SOURCES:
        seen = [frozenset(r.sampling.model_copy(update={"max_tokens": None}) for r in rs if r.source == source)
                for rs in records]
        present = [(e, s) for e, s in zip(entries, seen, strict=True) if s]
        if len({s for _, s in present}) > 1:
            parts = "; ".join(f"{e.label}: " + " | ".join(sorted(sampling_text(x) for x in s)) for e, s in present)
            out.append(f"{source}: records were made with different sampling parameters ({parts})")
    return out


def suite_warnings(runs: Sequence[RunInfo]) -> list[str]:
    prints: dict[str, set[str]] = {}
    for run in runs:
        for s in run.suites:
            prints.setdefault(s.name, set()).add(s.fingerprint)
    return [f"suite {name} differs between the compared runs ({len(fps)} versions): compared on shared item ids"
            for name, fps in prints.items() if len(fps) > 1]


def _variants(records: Sequence[list[Record]], source: str) -> list[str]:
    per = [{r.variant for r in rs if r.source == source} for rs in records]
    common = set.intersection(*per) if per else set()
    return [POOLED, *sorted(common)]


def build_comparison(runs: Sequence[RunInfo], entries: Sequence[Entry], records: Sequence[list[Record]], *,
                     bins: int = 10, binning: Binning = "width", resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED) -> Comparison:
    """Compare ``entries`` (records[i] are entry i's records); runs are those the entries come from."""
    if len(entries) < 2:
        raise ValueError("a comparison needs at least two entries")
    metrics: list[Metric] = ["accuracy", "ece" if binning == "width" else "ece_mass", "brier", "auroc"]
    sources = [s for s in SOURCES if any(r.source == s for rs in records for r in rs)]
    rows: list[ComparisonRow] = []
    for source in sources:
        for variant in _variants(records, source):
            row = compare_row(entries, records, source, variant, bins=bins, binning=binning, resamples=resamples,
                              seed=seed, metrics=metrics)
            rows.append(row)
            if variant == POOLED and row.items == 0:
                break  # nothing shared pooled: no variant has anything either
    warnings = sampling_warnings(entries, runs, records) + suite_warnings(runs)
    by_model: dict[str, set[str]] = {}
    for e in entries:
        by_model.setdefault(e.model, set()).update(e.reported_ids)
    warnings += [f"{m}: the API reported different model ids across the compared runs ({', '.join(sorted(ids))})"
                 for m, ids in by_model.items() if len(ids) > 1]
    warnings += [f"{e.label}: no records" for e in entries if e.records == 0]
    return Comparison(entries=list(entries), bins=bins, binning=binning, resamples=resamples, seed=seed,
                      metrics=list(metrics), rows=rows, warnings=warnings)


def make_entries(runs: Sequence[RunInfo], records: Sequence[list[Record]],
                 models: Sequence[str] | None = None) -> tuple[list[Entry], list[list[Record]], list[RunInfo]]:
    """(run, model) entries: every model of every run, or only ``models`` in the order given.

    Raises ValueError naming a requested model that none of the runs has."""
    label_run = len({r.run_id for r in runs}) > 1
    entries: list[Entry] = []
    out_records: list[list[Record]] = []
    out_runs: list[RunInfo] = []
    for run, recs in zip(runs, records, strict=True):
        present = list(dict.fromkeys([*run.models, *(r.model for r in recs)]))
        for model in present if models is None else [m for m in models if m in present]:
            mine = [r for r in recs if r.model == model]
            reported = sorted({r.model_reported for r in mine if r.model_reported}
                              | ({run.model_ids[model]} if run.model_ids.get(model) else set()))
            entries.append(Entry(label=f"{model} @ {run.run_id}" if label_run else model, run_id=run.run_id,
                                 model=model, reported_ids=reported, records=len(mine)))
            out_records.append(mine)
            out_runs.append(run)
    if models is not None:
        missing = [m for m in models if not any(e.model == m for e in entries)]
        if missing:
            have = sorted({m for run in runs for m in run.models})
            raise ValueError(f"model {missing[0]!r} is not in the compared run(s); they have: {', '.join(have)}")
        order = {m: i for i, m in enumerate(models)}
        ranked = sorted(range(len(entries)), key=lambda i: order[entries[i].model])
        if len({r.run_id for r in runs}) == 1:
            entries = [entries[i] for i in ranked]
            out_records = [out_records[i] for i in ranked]
            out_runs = [out_runs[i] for i in ranked]
    return entries, out_records, out_runs


def comparison_diagrams(c: Comparison) -> dict[str, Diagram | None]:
    """Per source, the overlaid curves of every entry on the shared items (pooled over variants)."""
    out: dict[str, Diagram | None] = {}
    for row in c.rows:
        if row.variant != POOLED:
            continue
        series = [CurveSeries(label=f"{e.label} (n={e.n})", bins=e.bins) for e in row.entries if e.n]
        key = anchor("compare", row.source)
        out[row.source] = diagram(f"{row.source} · {row.items} shared items", key, series, []) if series else None
    return out


def render_comparison_html(c: Comparison) -> str:
    """The comparison as a self-contained HTML page."""
    diagrams = comparison_diagrams(c)
    return render("compare.html.jinja", c=c, sources=list(diagrams), diagrams=diagrams)
