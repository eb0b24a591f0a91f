"""``probe compare``: models side by side on the items they share, with paired differences."""

from __future__ import annotations

import io
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from probe.cli._common import err_console, find_run, open_store
from probe.errors import UsageError
from probe.fileio import write_text_atomic
from probe.record import Record
from probe.reports.compare import Comparison, build_comparison, make_entries, render_comparison_html
from probe.storage import DEFAULT_DB

FORMATS = ("table", "json", "html")


def check_format(fmt_name: str, json_out: bool, binning: str) -> str:
    if fmt_name not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt_name!r}")
    if binning not in ("width", "mass"):
        raise UsageError(f"--binning must be width or mass, not {binning!r}")
    return "json" if json_out else fmt_name


def emit(text: str, output: Path | None) -> None:
    """Write to ``output`` (atomically) or stdout."""
    if output is None:
        typer.echo(text, nl=not text.endswith("\n"))
        return
    write_text_atomic(output, text)
    err_console.print(f"wrote {output}")


def fmt_value(v: float | None, ci: tuple[float, float] | None = None) -> str:
    if v is None:
        return "—"
    return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def fmt_diff(v: float | None, ci: tuple[float, float] | None, p: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "") + (f" p={p:.3f}" if p is not None else "")


def render_comparison_table(c: Comparison, width: int = 170) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=width, highlight=False, no_color=True, force_terminal=False)
    for w in c.warnings:
        con.print(f"WARNING: {w}", markup=False)
    con.print("entries: " + "; ".join(f"{e.label}{' (baseline)' if i == 0 else ''}"
                                      + (f" [API: {', '.join(e.reported_ids)}]" if e.reported_ids else "")
                                      for i, e in enumerate(c.entries)), markup=False)
    for source in dict.fromkeys(r.source for r in c.rows):
        rows = [r for r in c.rows if r.source == source]
        t = Table("variant", "entry", "items", "scored", "accuracy", "ECE", "signed ECE", "Brier", "AUROC",
                  title=source, title_justify="left")
        for row in rows:
            for e in row.entries:
                t.add_row("all" if row.variant == "*" else row.variant, e.label, str(row.items), str(e.n),
                          fmt_value(e.accuracy, e.accuracy_ci), fmt_value(e.ece, e.ece_ci), fmt_value(e.signed_ece),
                          fmt_value(e.brier, e.brier_ci), fmt_value(e.auroc, e.auroc_ci))
        con.print(t)
        d = Table("variant", "difference", *(f"Δ {m}" for m in c.metrics),
                  title=f"{source}: paired differences (entry − baseline)", title_justify="left")
        for row in rows:
            for label in dict.fromkeys(x.label for x in row.differences):
                cells = [next((fmt_diff(x.result.difference, x.result.ci, x.result.p_value) for x in row.differences
                               if x.label == label and x.result.metric == m), "—") for m in c.metrics]
                d.add_row("all" if row.variant == "*" else row.variant, f"{label} − {c.entries[0].label}", *cells)
        if d.row_count:
            con.print(d)
        for row in rows:
            for n in row.notes:
                con.print(f"note ({'all' if row.variant == '*' else row.variant}): {n}", markup=False)
    return buf.getvalue()


def compare(
    run_ids: list[str] = typer.Argument(..., help="Run id(s) or unique prefixes."),
    models: str | None = typer.Option(None, "--models", help="Comma-separated models to compare; baseline: the first model (one run) or the first run (several)."),
    fmt_name: str = typer.Option("table", "--format", help="table, json or html."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    output: Path | None = typer.Option(None, "-o", "--output", help="File to write (default: stdout)."),
    bins: int = typer.Option(10, "--bins", min=1, max=1000, help="Bins M."),
    binning: str = typer.Option("width", "--binning", help="width or mass."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Bootstrap seed."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
) -> None:
    """Models side by side on shared items: metrics with intervals, paired differences, overlaid curves."""
    fmt_name = check_format(fmt_name, json_out, binning)
    wanted = [m.strip() for m in models.split(",") if m.strip()] if models else None
    if wanted is not None and len(set(wanted)) != len(wanted):
        raise UsageError(f"--models lists a model twice: {models}")
    with open_store(db) as store:
        runs = list({r.run_id: r for r in (find_run(store, rid) for rid in run_ids)}.values())
        records: list[list[Record]] = [store.records(r.run_id) for r in runs]
    try:
        entries, entry_records, entry_runs = make_entries(runs, records, wanted)
    except ValueError as e:
        raise UsageError(f"--models: {e}") from None
    if len(entries) < 2:
        raise UsageError(f"nothing to compare: {len(entries)} model(s) in {', '.join(r.run_id for r in runs)}; "
                         "give two runs, or a run with --models A,B")
    c = build_comparison(entry_runs, entries, entry_records, bins=bins,
                         binning="width" if binning == "width" else "mass", resamples=resamples, seed=seed)
    if fmt_name == "json":
        text = json.dumps(c.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    elif fmt_name == "html":
        text = render_comparison_html(c)
    else:
        text = render_comparison_table(c)
    emit(text, output)
