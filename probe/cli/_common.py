"""Shared bits of the CLI: consoles and JSON output."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich.console import Console

# Not a terminal (a pipe, a file, CI): wide enough that tables do not wrap their cells.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
console = Console(highlight=False, width=_WIDTH)
err_console = Console(stderr=True, highlight=False, width=_WIDTH)


def print_json(value: Any) -> None:
    """Print one JSON document on stdout (no rich markup, no wrapping)."""
    print(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False))
