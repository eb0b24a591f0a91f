"""Shared bits of the CLI: consoles and JSON output."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def print_json(value: Any) -> None:
    """Print one JSON document on stdout (no rich markup, no wrapping)."""
    print(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False))
