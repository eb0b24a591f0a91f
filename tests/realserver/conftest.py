"""Fixtures for the ``realserver`` tests: a real llama.cpp server serving a tiny self-written model.

These tests are deselected by default (``-m "not realserver"`` in pyproject's addopts); run them
with ``python -m pytest -m realserver``. When any is selected, llama-cpp-python[server] is
installed into this interpreter's environment first (outside the per-test timeout): the very first
time that compiles llama.cpp (about 7 minutes on 2 cores), later it reuses pip's cached wheel.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realserver.server import LlamaServer, ServerError, ensure_installed
from tests.realserver.tiny_gguf import write_tiny_gguf

_install_error: str | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    global _install_error
    if not any(item.get_closest_marker("realserver") for item in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            "realserver: checking llama-cpp-python[server] (the first install compiles llama.cpp: ~7 min on 2 idle cores)"
        )
    try:
        took = ensure_installed(sys.executable)
    except ServerError as exc:
        _install_error = str(exc)
        return
    if reporter is not None and took:
        reporter.write_line(f"realserver: installed llama-cpp-python[server] in {took:.0f}s")


def _require_install() -> None:
    if _install_error is not None:
        pytest.fail(_install_error, pytrace=False)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny GGUF model, written once per session."""
    return write_tiny_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf")


def _serve(model: Path, logdir: Path, api_key: str | None) -> Iterator[LlamaServer]:
    _require_install()
    server = LlamaServer(model, log_path=logdir / "server.log", api_key=api_key)
    try:
        server.start()
    except ServerError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llama_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A running ``python -m llama_cpp.server`` without an API key."""
    yield from _serve(tiny_model, tmp_path_factory.mktemp("server"), None)


@pytest.fixture(scope="session")
def auth_key() -> str:
    """The key the auth server requires (random per session, never printed)."""
    return "sk-realserver-" + secrets.token_hex(12)


@pytest.fixture(scope="session")
def llama_auth_server(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, auth_key: str
) -> Iterator[LlamaServer]:
    """A running server started with ``--api_key``."""
    yield from _serve(tiny_model, tmp_path_factory.mktemp("auth-server"), auth_key)


@pytest.fixture()
def base_url(llama_server: LlamaServer) -> str:
    """Base URL (…/v1) of the keyless server."""
    return llama_server.base_url

