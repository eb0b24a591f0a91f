"""Prometheus text exposition (format 0.0.4) of the service's gauges and counters. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@dataclass
class Family:
    """One metric: name, help, type and its samples (labels → value)."""

    name: str
    help: str
    kind: str  # gauge | counter
    samples: list[tuple[Mapping[str, str], float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> Family:
        self.samples.append((labels, value))
        return self


def render(families: list[Family]) -> str:
    lines: list[str] = []
    for f in families:
        lines.append(f"# HELP {f.name} {f.help}")
        lines.append(f"# TYPE {f.name} {f.kind}")
        for labels, value in f.samples:
            tag = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            number = repr(float(value)) if value != int(value) else str(int(value))
            lines.append(f"{f.name}{{{tag}}} {number}" if tag else f"{f.name} {number}")
    return "\n".join(lines) + "\n"
