"""jinja2 rendering: templates ship as package data, every value is escaped (autoescape on)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from functools import cache
from typing import Any

import jinja2

from probe import __version__
from probe.analysis.curves import SPARSE_BELOW
from probe.reports._notes import reason_text


def _num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("probe.reports", "templates"),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["num"] = _num
    env.filters["reason"] = reason_text
    return env


def render(template: str, **context: Any) -> str:
    """Render a template with the common context (probe version, time, sparse threshold)."""
    common = {"probe_version": __version__, "sparse_below": SPARSE_BELOW,
              "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    return environment().get_template(template).render(**common, **context)


