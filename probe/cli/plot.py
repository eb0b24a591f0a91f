"""``probe plot``: one reliability diagram of a run as PNG (or SVG)."""

from __future__ import annotations

from pathlib import Path

import typer

from probe.cli._common import err_console, find_run, open_store
from probe.errors import Failure, UsageError
from probe.reports.plot import NothingToPlot, write_diagram
from probe.storage import DEFAULT_DB


def plot(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    model: str = typer.Option(..., "--model", "-m", help="provider/model."),
    source: str = typer.Option(..., "--source", help="token, ptrue, verbal or consistency."),
    output: Path = typer.Option(..., "-o", "--output", help="Image to write (.png, or .svg)."),
    variant: str | None = typer.Option(None, "--variant", help="Only this variant ('*' = pooled)."),
    bins: int = typer.Option(10, "--bins", min=1, max=1000, help="Bins M."),
    binning: str = typer.Option("width", "--binning", help="width or mass."),
    dpi: int = typer.Option(150, "--dpi", min=30, max=1200, help="PNG resolution."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
) -> None:
    """Export one reliability diagram (model × source, a curve per variant) as PNG for slides and READMEs."""
    if binning not in ("width", "mass"):
        raise UsageError(f"--binning must be width or mass, not {binning!r}")
    if output.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"-o: {output} must end in .png or .svg")
    with open_store(db) as store:
        info = find_run(store, run_id)
        records = store.records(info.run_id)
    models = sorted({r.model for r in records} | set(info.models))
    if model not in models:
        raise UsageError(f"--model: {model!r} is not in run {info.run_id} (it has: {', '.join(models)})")
    sources = sorted({r.source for r in records if r.model == model})
    if source not in sources:
        raise UsageError(f"--source: {model} has no {source!r} records in run {info.run_id} "
                         f"(it has: {', '.join(sources) or 'none'})")
    try:
        path = write_diagram(info, records, model, source, output, variant=variant, bins=bins,
                             binning="width" if binning == "width" else "mass", dpi=dpi)
    except NothingToPlot as e:
        raise Failure(f"nothing to plot: {e}") from None
    err_console.print(f"wrote {path}")
