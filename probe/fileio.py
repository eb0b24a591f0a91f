"""Writing output files: all or nothing."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from probe.errors import UsageError


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename, creating the parent
    directory; a path that cannot be written is the user's to fix (UsageError naming it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write: {e.strerror or e}") from None
    return path
