"""Headless Chromium (Debian's ``chromium``) for page checks: the DOM after parsing, and screenshots."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-extensions", "--hide-scrollbars", "--virtual-time-budget=3000"]


def chromium() -> str:
    """Path of the chromium binary, or skip the test."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("headless chromium is not installed (apt-get install chromium)")
    return found


def _run(args: list[str], profile: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def dump_dom(url: str, profile: Path, timeout: float = 90.0) -> str:
    """The document as Chromium parsed (and, with scripts, built) it."""
    r = _run(["--dump-dom", url], profile, timeout)
    if r.returncode != 0 or "<html" not in r.stdout:
        raise AssertionError(f"chromium failed on {url}: {r.returncode}\n{r.stderr[-2000:]}")
    return r.stdout


def screenshot(url: str, path: Path, profile: Path, size: tuple[int, int] = (1280, 900),
               timeout: float = 90.0) -> Path:
    r = _run([f"--screenshot={path}", f"--window-size={size[0]},{size[1]}", url], profile, timeout)
    if r.returncode != 0 or not path.exists():
        raise AssertionError(f"chromium screenshot of {url} failed: {r.returncode}\n{r.stderr[-2000:]}")
    return path
