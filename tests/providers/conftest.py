"""Fixtures for provider tests: a loopback HTTP server and a clean environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from providers.capabilities import clear_memo
from tests.providers.loopback import LoopbackServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No provider variable leaks in from the real environment; caches go to tmp."""
    import os

    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL", "_API_KEY_FILE", "_AD_TOKEN", "_ENDPOINT", "_API_VERSION")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROBE_CACHE_DIR", str(tmp_path / "cache"))
    clear_memo()
    yield
    clear_memo()
