"""Install, start and stop a real llama.cpp OpenAI-compatible server (llama-cpp-python) on loopback.

Used by the pytest fixtures in ``conftest.py`` and by ``scripts/realserver.sh``:

- ``ensure_installed()`` pip-installs ``llama-cpp-python[server]`` into the running interpreter's
  environment if it is missing. The first install compiles llama.cpp (about 7 minutes on 2
  cores); pip caches the built wheel, so later installs (a fresh venv in CI) take seconds.
  ``CMAKE_ARGS=-DGGML_NATIVE=OFF`` makes the cached wheel portable across x86-64 machines.
- ``LlamaServer`` writes nothing itself: give it a GGUF path (see ``tiny_gguf.py``); ``start()``
  launches ``python -m llama_cpp.server`` on a free port, waits for ``/v1/models`` and returns the
  base URL; ``stop()`` terminates it. Its stdout/stderr go to a log file shown on failure.

``python -m tests.realserver.server [--api-key KEY]`` runs one in the foreground; Ctrl-C or SIGTERM stops
it and its server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

REQUIREMENT = os.environ.get("PROBE_LLAMACPP_REQUIREMENT", "llama-cpp-python[server]==0.3.36")
MODEL_ALIAS = "tiny"
START_TIMEOUT_S = 120.0


class ServerError(RuntimeError):
    """The server could not be installed or started; the message carries the log tail."""


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def is_installed(python: str = sys.executable) -> bool:
    """Whether ``llama_cpp.server`` (with its extras) imports in ``python``'s environment."""
    probe = subprocess.run(
        [python, "-c", "import llama_cpp, llama_cpp.server.app, sse_starlette, starlette_context"],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0


def ensure_installed(python: str = sys.executable, log_path: Path | None = None) -> float:
    """Install ``REQUIREMENT`` into ``python``'s environment if missing; return seconds spent."""
    if is_installed(python):
        return 0.0
    log_path = log_path or Path(tempfile.gettempdir()) / "probe-llamacpp-install.log"
    env = dict(os.environ)
    env.setdefault("CMAKE_ARGS", "-DGGML_NATIVE=OFF")
    start = time.monotonic()
    with log_path.open("w") as log:
        done = subprocess.run(
            [python, "-m", "pip", "install", "--disable-pip-version-check", REQUIREMENT],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    took = time.monotonic() - start
    if done.returncode != 0 or not is_installed(python):
        raise ServerError(
            f"pip install {REQUIREMENT!r} failed (exit {done.returncode}); log {log_path}:\n{_tail(log_path)}"
        )
    return took


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaServer:
    """One ``python -m llama_cpp.server`` subprocess serving a GGUF model on 127.0.0.1."""

    def __init__(
        self,
        model_path: Path,
        *,
        log_path: Path,
        api_key: str | None = None,
        alias: str = MODEL_ALIAS,
        python: str = sys.executable,
        n_ctx: int = 2048,
    ) -> None:
        self.model_path = model_path
        self.log_path = log_path
        self.api_key = api_key
        self.alias = alias
        self.python = python
        self.n_ctx = n_ctx
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [
            self.python, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", "1",
            "--n_threads_batch", "1",
        ]
        if self.api_key is not None:
            cmd += ["--api_key", self.api_key]
        return cmd

    def start(self) -> str:
        """Start the server and wait until ``/v1/models`` answers; return the base URL."""
        self.port = free_port()
        log = self.log_path.open("wb")
        self._log = log
        self._proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerError(
                    f"llama_cpp.server exited with {self._proc.returncode} before answering;"
                    f" log {self.log_path}:\n{_tail(self.log_path)}"
                )
            if self._models_ready():
                return self.base_url
            time.sleep(0.2)
        self.stop()
        raise ServerError(f"llama_cpp.server did not answer /v1/models in {START_TIMEOUT_S:.0f}s; "
                          f"log {self.log_path}:\n{_tail(self.log_path)}")

    def _models_ready(self) -> bool:
        req = urllib.request.Request(self.base_url + "/models")
        if self.api_key is not None:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                body = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return any(m.get("id") == self.alias for m in body.get("data", []))

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s) and close its log."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log, self._log = self._log, None
        if log is not None:
            with contextlib.suppress(OSError):
                log.close()

    def requests_seen(self, method: str = "POST", path: str = "/v1/chat/completions") -> int:
        """How many requests to ``path`` the server's access log shows so far."""
        needle = f'"{method} {path} HTTP/'
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return 0
        return sum(1 for line in text.splitlines() if needle in line)

    def log_tail(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)


@contextlib.contextmanager
def running_server(model_path: Path, log_path: Path, *, api_key: str | None = None) -> Iterator[LlamaServer]:
    """Context manager: a started server, stopped on exit."""
    server = LlamaServer(model_path, log_path=log_path, api_key=api_key)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str]) -> int:
    from tests.realserver.tiny_gguf import write_tiny_gguf

    parser = argparse.ArgumentParser(description="Serve the tiny GGUF model with llama-cpp-python.")
    parser.add_argument("--api-key", default=None, help="Require this bearer key.")
    parser.add_argument("--install-only", action="store_true", help="Install llama-cpp-python and exit.")
    args = parser.parse_args(argv)
    took = ensure_installed()
    print(f"llama-cpp-python ready ({took:.0f}s spent installing)", flush=True)
    if args.install_only:
        return 0
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # background jobs ignore SIGINT otherwise
        signal.signal(sig, _interrupt)
    with tempfile.TemporaryDirectory(prefix="probe-realserver-") as tmp:
        model = write_tiny_gguf(Path(tmp) / "tiny.gguf")
        with running_server(model, Path(tmp) / "server.log", api_key=args.api_key) as server:
            print(f"serving {MODEL_ALIAS!r} at {server.base_url} (LLAMACPP_BASE_URL); Ctrl-C stops", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
