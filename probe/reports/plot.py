"""One reliability diagram of a run as a PNG (or SVG) file, for slides and READMEs."""

from __future__ import annotations

from pathlib import Path

from probe.analysis import POOLED, Binning, build_report
from probe.record import Record
from probe.reports._notes import no_scores_note
from probe.reports._plot import CurveSeries, figure_png, figure_svg, reliability_figure
from probe.storage import RunInfo


class NothingToPlot(ValueError):
    """The (model, source) has no scored record; the message says why."""


def write_diagram(info: RunInfo, records: list[Record], model: str, source: str, path: Path, *,
                  variant: str | None = None, bins: int = 10, binning: Binning = "width", dpi: int = 150) -> Path:
    """Draw the (model, source) reliability diagram, one curve per variant (or only ``variant``), to
    ``path`` (.svg writes SVG, anything else PNG). NothingToPlot when it has no scored record."""
    mine = [r for r in records if r.model == model and r.source == source]
    rep = build_report(info, mine, bins=bins, binning=binning, resamples=1)
    pooled = next((g for g in rep.groups if g.pooled), None)
    if pooled is None or pooled.n_ok == 0:
        raise NothingToPlot(f"{model}: {no_scores_note(source, pooled.status_counts if pooled else {})}")
    groups = [g for g in rep.groups if not g.pooled and g.n_ok and (variant is None or g.variant == variant)]
    if variant == POOLED:
        groups = [pooled]
    if not groups:
        raise NothingToPlot(f"{model} / {source}: no scored record for variant {variant!r}")
    series = [CurveSeries(label=f"{'all variants' if g.pooled else g.variant} (n={g.n_ok})",
                          bins=g.bins_width if binning == "width" else g.bins_mass) for g in groups]
    fig = reliability_figure(f"{model} · {source}", series)
    if path.suffix.lower() == ".svg":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(figure_svg(fig, "plot"), encoding="utf-8")
        return path
    return figure_png(fig, path, dpi=dpi)
