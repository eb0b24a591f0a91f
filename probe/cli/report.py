"""``probe report RUN_ID``: reliability curves and calibration metrics of a run, as a table or JSON."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from probe.analysis import GroupReport, RunReport, build_report
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from probe.cli._common import console, err_console, find_run, open_store
from probe.errors import UsageError
from probe.fileio import write_text_atomic
from probe.record import Record
from probe.reports import render_run_report
from probe.storage import DEFAULT_DB, RunInfo

FORMATS = ("table", "json", "html")
BINNINGS = ("width", "mass")


def load_run(db: Path, run_id: str) -> tuple[RunInfo, list[Record]]:
    """A run and its records; UsageError (exit 2) for a missing database or an unknown run id."""
    with open_store(db) as store:
        info = find_run(store, run_id)
        return info, store.records(info.run_id)


def fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def fmt_ci(x: float | None, ci: tuple[float, float] | None, digits: int = 3) -> str:
    if x is None:
        return "—"
    return fmt(x, digits) if ci is None else f"{x:.{digits}f}\n{ci[0]:.{digits}f}–{ci[1]:.{digits}f}"


def _summary_table(rep: RunReport) -> Table:
    other_label = "mass" if rep.binning == "width" else "width"
    t = Table(title=f"run {rep.run_id} (intervals below values)", title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("model", no_wrap=True)
    t.add_column("source", no_wrap=True)
    t.add_column("variant", no_wrap=True)
    for name in ("n ok/n", "accuracy", f"ECE {rep.binning}", f"ECE {other_label}", "ECE if cal.", "signed ECE",
                 "MCE", "Brier", "NLL", "AUROC", "sel.acc 50%", "AURC"):
        t.add_column(name, justify="right", no_wrap=True)
    for g in rep.groups:
        other = g.ece_mass if rep.binning == "width" else g.ece_width
        t.add_row(
            g.model, g.source, g.variant, f"{g.n_ok}/{g.n}",
            fmt_ci(g.accuracy, g.accuracy_ci), fmt_ci(g.ece, g.ece_ci), fmt(other), fmt(g.ece_width_if_calibrated),
            fmt(g.signed_ece),
            fmt(g.mce), fmt(g.brier), fmt(g.nll), fmt_ci(g.auroc, g.auroc_ci), fmt(g.selective_accuracy_50),
            fmt(g.aurc),
        )
    return t


def _status_table(rep: RunReport) -> Table | None:
    rows = [g for g in rep.groups if not g.pooled and (set(g.status_counts) - {"ok"} or g.n_ok_unscored)]
    if not rows:
        return None
    t = Table("model", "source", "variant", "not scored (by status)", title="records not scored", box=box.SIMPLE_HEAD,
              title_justify="left")
    for g in rows:
        parts = [f"{k}: {v}" for k, v in g.status_counts.items() if k != "ok"]
        if g.n_ok_unscored:
            parts.append(f"ok without confidence or grade: {g.n_ok_unscored}")
        t.add_row(g.model, g.source, g.variant, ", ".join(parts))
    return t


def _curve_table(g: GroupReport, binning: str) -> Table:
    bins = g.bins_width if binning == "width" else g.bins_mass
    t = Table("bin", "n", "mean conf", "accuracy [95 % Wilson]", "note", box=box.SIMPLE_HEAD,
              title=f"{g.model} / {g.source} / {g.variant} — {binning} bins", title_justify="left")
    for b in bins:
        span = "empty" if b.lo is None or b.hi is None else f"{b.lo:.3f}–{b.hi:.3f}"
        acc = "—" if b.accuracy is None or b.accuracy_ci is None else (
            f"{b.accuracy:.3f} [{b.accuracy_ci[0]:.3f}, {b.accuracy_ci[1]:.3f}]")
        t.add_row(span, str(b.n), fmt(b.mean_confidence), acc, "sparse (n < 30)" if b.sparse and b.n else "")
    return t


def render_table(rep: RunReport, curves: bool = False, width: int | None = None) -> str:
    """The report as text for people."""
    buf = io.StringIO()
    con = Console(file=buf, width=width or 200, highlight=False, force_terminal=False, no_color=True)
    con.print(f"run {rep.run_id} ({rep.status}) · suites: {', '.join(rep.suites) or '—'} · "
              f"{rep.bins} {'equal-width' if rep.binning == 'width' else 'equal-mass'} bins · intervals: "
              f"{rep.level:.0%} percentile bootstrap, B = {rep.resamples}, seed {rep.seed}")
    con.print(_summary_table(rep))
    status = _status_table(rep)
    if status is not None:
        con.print(status)
    if curves:
        for g in rep.groups:
            if g.n_ok:
                con.print(_curve_table(g, rep.binning))
    con.print("variant '*' pools all variants of a model and source; '—' = undefined (e.g. AUROC when all "
              "answers are right). 'ECE if cal.': the equal-width ECE a perfectly calibrated model with these "
              "confidences and n shows from noise alone. Definitions: probe report --format json (\"definitions\").")
    for w in rep.warnings:
        con.print(f"warning: {w}")
    return buf.getvalue()


def report(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    fmt_name: str = typer.Option("table", "--format", help="table, json or html."),
    output: Path | None = typer.Option(None, "-o", "--output", help="File to write (default: stdout)."),
    bins: int = typer.Option(10, "--bins", min=1, max=1000, help="Bins M for both binnings."),
    binning: str = typer.Option("width", "--binning", help="width or mass: binning behind ECE, MCE, RMS-CE."),
    curves: bool = typer.Option(False, "--curves", help="Table format: also print every reliability curve."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", min=1, help="Bootstrap resamples."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Bootstrap seed."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
) -> None:
    """Reliability curves and calibration metrics per model × source × variant, with intervals."""
    if fmt_name not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt_name!r}")
    if binning not in BINNINGS:
        raise UsageError(f"--binning must be width or mass, not {binning!r}")
    info, records = load_run(db, run_id)
    rep = build_report(info, records, bins=bins, binning="width" if binning == "width" else "mass",
                       resamples=resamples, seed=seed)
    if fmt_name == "json":
        text = json.dumps(rep.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    elif fmt_name == "html":
        text = render_run_report(info, records, report=rep)
    else:
        tty_width = console.width if output is None and sys.stdout.isatty() else None
        text = render_table(rep, curves=curves, width=tty_width)
    if output is None:
        sys.stdout.write(text)
        return
    write_text_atomic(output, text)
    err_console.print(f"wrote {output}")
