"""Reports: a run's self-contained HTML report, model comparisons, history across runs, PNG export.

Figures come from the analysis package; this package only lays them out (jinja2 templates with
autoescape, matplotlib Agg figures inlined as SVG).
"""

from probe.reports._run import render_run_report, write_html_report
from probe.reports.compare import Comparison, build_comparison, make_entries, render_comparison_html
from probe.reports.history import History, build_history, history_from_store, render_history_html
from probe.reports.plot import write_diagram

__all__ = [
    "Comparison",
    "History",
    "build_comparison",
    "build_history",
    "history_from_store",
    "make_entries",
    "render_comparison_html",
    "render_history_html",
    "render_run_report",
    "write_diagram",
    "write_html_report",
]
