"""Reliability diagrams drawn with matplotlib (Agg canvas), exported as inline SVG or PNG.

No pyplot: each figure is a ``matplotlib.figure.Figure`` on its own Agg canvas, so nothing global
is touched and figures never leak. SVG text stays text (``svg.fonttype: none``) and every figure
gets its own id salt, so many diagrams can sit in one HTML page without clashing element ids.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from pydantic import BaseModel, ConfigDict, Field

from probe.analysis.curves import SPARSE_BELOW, ReliabilityBin

POOLED_COLOR = "#222222"
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
          "#7f7f7f", "#bcbd22")


class CurveSeries(BaseModel):
    """One reliability curve to draw (one variant, one model, or one run)."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="Legend label.")
    bins: list[ReliabilityBin] = Field(description="The curve's bins, in order.")
    pooled: bool = Field(default=False, description="Drawn in black and thicker (the curve of all variants).")


def literal(text: str) -> str:
    """Text shown as written: a ``$`` would otherwise start matplotlib mathtext."""
    return text.replace("$", r"\$")


def _yerr(value: float | None, ci: tuple[float, float] | None) -> tuple[float, float]:
    """Distances from the value down and up to its interval (0 when there is none)."""
    if value is None or ci is None:
        return 0.0, 0.0
    return max(0.0, value - ci[0]), max(0.0, ci[1] - value)


def _bar_span(b: ReliabilityBin) -> tuple[float, float] | None:
    if b.lo is None or b.hi is None:
        return None
    hi = b.hi if b.hi - b.lo >= 0.01 else b.lo + 0.01
    return b.lo, hi


def _draw_curve(ax: object, hist: object | None, s: CurveSeries, color: str, slot: int, slots: int) -> None:
    full = [b for b in s.bins if b.n > 0 and not b.sparse]
    sparse = [b for b in s.bins if b.n > 0 and b.sparse]
    points = sorted((b for b in s.bins if b.n > 0), key=lambda b: b.mean_confidence or 0.0)
    ax.plot([b.mean_confidence for b in points], [b.accuracy for b in points],  # type: ignore[attr-defined]
            color=color, lw=2.4 if s.pooled else 1.4, alpha=0.9, label=literal(s.label), zorder=5 if s.pooled else 3)
    for group, face, alpha in ((full, color, 1.0), (sparse, "white", 0.75)):
        if not group:
            continue
        x = [b.mean_confidence for b in group]
        y = [b.accuracy for b in group]
        err = [_yerr(b.accuracy, b.accuracy_ci) for b in group]
        ax.errorbar(x, y, yerr=[[e[0] for e in err], [e[1] for e in err]], fmt="o",  # type: ignore[attr-defined]
                    ms=6.5 if s.pooled else 4.5, mew=1.4 if s.pooled else 1.0, color=color, mfc=face, mec=color,
                    ecolor=color, elinewidth=1.6 if s.pooled else 0.8, capsize=0,
                    alpha=alpha if s.pooled else alpha * 0.7, zorder=6 if s.pooled else 4)
    if hist is None:
        return
    for b in s.bins:
        span = _bar_span(b)
        if span is None or b.n == 0:
            continue
        width = (span[1] - span[0]) / slots
        hist.bar(span[0] + width * slot, b.n, width=width * 0.92, align="edge", color=color,  # type: ignore[attr-defined]
                 alpha=0.35 if b.sparse else 0.85, hatch="///" if b.sparse else None, edgecolor=color, lw=0.5)


def reliability_figure(title: str, series: Sequence[CurveSeries], *, width_in: float = 4.4) -> Figure:
    """Diagonal, one curve per series with Wilson interval bars (hollow markers: n < 30), and under it
    a histogram of how many predictions fell in each bin (hatched: n < 30)."""
    fig = Figure(figsize=(width_in, width_in * 1.25))
    FigureCanvasAgg(fig)
    # fixed margins: constrained layout would measure every text on every save (a third of the time)
    fig.subplots_adjust(left=0.16, right=0.9, top=0.94, bottom=0.085, hspace=0.1)
    ax, hist = fig.subplots(2, 1, sharex=True, height_ratios=(3.2, 1.0))
    ax.plot([0, 1], [0, 1], ls="--", color="#888888", lw=1.0, label="perfect calibration", zorder=1)
    in_hist = [s for s in series if s.pooled] or list(series)  # the pooled counts stand for their variants
    k = 0
    for s in series:
        color = POOLED_COLOR if s.pooled else COLORS[k % len(COLORS)]
        k += 0 if s.pooled else 1
        slot = next((j for j, h in enumerate(in_hist) if h is s), None)
        _draw_curve(ax, hist if slot is not None else None, s, color, slot or 0, len(in_hist))
    ax.plot([], [], "o", mfc="white", mec="#555555", color="#555555", alpha=0.7,
            label=f"sparse bin (n < {SPARSE_BELOW})")
    ax.set(xlim=(0, 1), ylim=(0, 1), ylabel="accuracy", title=literal(title))
    ax.grid(True, lw=0.4, alpha=0.4)
    ax.legend(loc="best", fontsize=7.5, frameon=True, framealpha=0.85)
    hist.axhline(SPARSE_BELOW, color="#888888", ls=":", lw=0.9)
    hist.text(1.01, SPARSE_BELOW, f"n={SPARSE_BELOW}", ha="left", va="center", fontsize=7, color="#666666",
              transform=hist.get_yaxis_transform(), clip_on=False)
    hist.set(xlim=(0, 1), xlabel="confidence", ylabel="predictions")
    if any(s.pooled for s in series):
        hist.text(0.01, 0.95, "all variants", transform=hist.transAxes, ha="left", va="top", fontsize=7,
                  color="#666666")
    hist.grid(True, axis="y", lw=0.4, alpha=0.4)
    return fig


def figure_svg(fig: Figure, salt: str) -> str:
    """The figure as an ``<svg>`` element for inlining (XML prolog and DOCTYPE removed, every element id
    prefixed with ``salt`` so several figures can share a page)."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    # matplotlib names groups figure_1, axes_1, …in every figure: make each figure's ids its own
    return (text.replace(' id="', f' id="{salt}-').replace('url(#', f'url(#{salt}-')
            .replace('href="#', f'href="#{salt}-'))


def figure_png(fig: Figure, path: Path, dpi: int = 150) -> Path:
    """Write the figure as PNG (Agg) to ``path``; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi, metadata={"Software": None})
    return path


class TimePoint(BaseModel):
    """One run on a history chart."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="Tick label (date and run id).")
    value: float | None = Field(description="The metric, or None when undefined.")
    ci: tuple[float, float] | None = Field(description="Its interval.")
    drift: bool = Field(default=False, description="Changed beyond the intervals since the previous run.")
    model_changed: bool = Field(default=False, description="The reported model id changed at this run.")


def history_figure(title: str, panels: Sequence[tuple[str, Sequence[TimePoint]]], *, width_in: float = 7.0) -> Figure:
    """One panel per metric: value per run with interval bars; drift points ringed in red and a dotted
    line where the reported model id changed."""
    fig = Figure(figsize=(width_in, 1.0 + 2.0 * len(panels)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (name, points) in zip(axes, panels, strict=True):
        xs = [i for i, p in enumerate(points) if p.value is not None]
        ys = [points[i].value for i in xs]
        err = [_yerr(points[i].value, points[i].ci) for i in xs]
        ax.errorbar(xs, ys, yerr=[[e[0] for e in err], [e[1] for e in err]], fmt="o-", color=COLORS[0], ms=5, capsize=3, lw=1.4)
        drift = [i for i in xs if points[i].drift]
        ax.plot(drift, [points[i].value for i in drift], "o", ms=13, mfc="none", mec="#d62728", mew=2.0,
                label="changed beyond the intervals" if drift else None)
        for i, p in enumerate(points):
            if p.model_changed:
                ax.axvline(i - 0.5, color="#9467bd", ls=":", lw=1.2, label="reported model id changed")
        ax.set_ylabel(literal(name))
        ax.grid(True, lw=0.4, alpha=0.4)
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            uniq = dict(zip(labels, handles, strict=True))
            ax.legend(uniq.values(), uniq.keys(), fontsize=7.5, loc="best")
    axes[0].set_title(literal(title))
    labels = [literal(p.label) for p in panels[0][1]] if panels else []
    axes[-1].set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=7.5)
    axes[-1].set_xlim(-0.5, max(0.5, len(labels) - 0.5))
    return fig
