"""Fixtures for provider tests: a loopback HTTP server and a clean environment."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def _is_loopback(host: object) -> bool:
    h = host.decode() if isinstance(host, bytes) else str(host)
    return h in _LOOPBACK_HOSTS or h.startswith("127.")


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any attempt to resolve or connect to a non-loopback address fails (no internet in tests);
    the refused hosts are listed in the returned list."""
    refused: list[str] = []
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_loopback(host):
            refused.append(str(host))
            raise OSError(f"test network guard: refused to resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
            refused.append(str(address[0]))
            raise OSError(f"test network guard: refused to connect to {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(self, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(self, address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return refused


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
