"""``probe history``: a model's figures over time on one suite, with drift flagged."""

from __future__ import annotations

import io
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Column, Table

from probe.analysis import POOLED
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from probe.cli._common import open_store
from probe.cli.compare import check_format, emit, fmt_diff, fmt_value
from probe.errors import UsageError
from probe.record import SOURCES
from probe.reports.history import History, history_from_store, render_history_html
from probe.storage import DEFAULT_DB


def render_history_table(h: History, width: int = 190) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=width, highlight=False, no_color=True, force_terminal=False)
    con.print(f"{h.model} on {h.suite} (fingerprint {h.fingerprint}); drift = the paired interval of the change "
              "from the previous run excludes zero", markup=False)
    for w in h.warnings:
        con.print(f"WARNING: {w}", markup=False)
    if h.skipped:
        con.print(f"not included (other suite versions): {', '.join(h.skipped)}", markup=False)
    for s in h.sources:
        t = Table("run", "created", Column("API reported", overflow="fold", max_width=24), "scored / n", "accuracy", "ECE", "Brier", "AUROC",
                  Column("change from previous", min_width=38), title=s.source, title_justify="left")
        for i, p in enumerate(s.points):
            step = s.steps[i - 1] if i else None
            change = "—"
            if step is not None:
                change = "\n".join(f"Δ{c.metric} {fmt_diff(c.result.difference, c.result.ci, None)}"
                                   + (" DRIFT" if c.drift else "") for c in step.changes) or "no shared items"
                if step.sampling_changed:
                    change += "\nsampling changed"
            reported = ", ".join(p.reported_ids) or "—"
            if step is not None and step.model_id_changed:
                reported += " (CHANGED)"
            m = p.metrics
            t.add_row(p.run_id, f"{p.created_at:%Y-%m-%d %H:%M}", reported, f"{m.n} / {p.n}",
                      fmt_value(m.accuracy, m.accuracy_ci), fmt_value(m.ece, m.ece_ci), fmt_value(m.brier, m.brier_ci),
                      fmt_value(m.auroc, m.auroc_ci), change)
        con.print(t)
    return buf.getvalue()


def history(
    suite: str = typer.Option(..., "--suite", "-s", help="Suite name."),
    model: str = typer.Option(..., "--model", "-m", help="provider/model."),
    source: str | None = typer.Option(None, "--source", help="Comma-separated sources (default: all)."),
    variant: str = typer.Option(POOLED, "--variant", help="One prompt variant (default: pooled)."),
    fingerprint: str | None = typer.Option(None, "--fingerprint", help="Suite version (default: the latest run's)."),
    fmt_name: str = typer.Option("table", "--format", help="table, json or html."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    output: Path | None = typer.Option(None, "-o", "--output", help="File to write (default: stdout)."),
    bins: int = typer.Option(10, "--bins", min=1, max=1000, help="Bins M."),
    binning: str = typer.Option("width", "--binning", help="width or mass."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Bootstrap seed."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
) -> None:
    """Each metric over time across runs of the same suite version and model; drift flagged."""
    fmt_name = check_format(fmt_name, json_out, binning)
    sources = [s.strip() for s in source.split(",") if s.strip()] if source else None
    bad = [s for s in sources or [] if s not in SOURCES]
    if bad:
        raise UsageError(f"--source: unknown source {bad[0]!r} (one of {', '.join(SOURCES)})")
    with open_store(db) as store:
        try:
            h = history_from_store(store, suite=suite, model=model, sources=sources, fingerprint=fingerprint,
                                   variant=variant, bins=bins, binning="width" if binning == "width" else "mass",
                                   resamples=resamples, seed=seed)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if fmt_name == "json":
        text = json.dumps(h.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    elif fmt_name == "html":
        text = render_history_html(h)
    else:
        text = render_history_table(h)
    emit(text, output)
