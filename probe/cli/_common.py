"""Shared bits of the CLI: consoles and JSON output."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from probe.errors import UsageError
from probe.storage import RunInfo, Store

# Not a terminal (a pipe, a file, CI): wide enough that tables do not wrap their cells.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
console = Console(highlight=False, width=_WIDTH)
err_console = Console(stderr=True, highlight=False, width=_WIDTH)


def open_store(db: Path) -> Store:
    """The database at ``db``; UsageError (exit 2) when there is none."""
    if not db.exists():
        raise UsageError(f"no database at {db} (pass --db PATH)")
    return Store(db)


def find_run(store: Store, run_id: str) -> RunInfo:
    """A run by id or unique prefix; UsageError (exit 2) naming what is wrong."""
    try:
        return store.find_run(run_id)
    except KeyError as e:
        raise UsageError(str(e).strip("\"'")) from None


def print_json(value: Any) -> None:
    """Print one JSON document on stdout (no rich markup, no wrapping)."""
    print(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False))
