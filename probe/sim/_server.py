"""Running the simulator: in-process (a background thread), in the foreground (``probe sim serve``),
or as a subprocess (benchmarks, kill tests)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from probe.sim._app import SimApp, SimConfig
from probe.sim._faults import FaultPlan, Latency, parse_faults, parse_latency
from probe.sim._knowledge import Knowledge
from probe.suite import Suite
from probe.suite_io import SuiteError, available_suites, load_suite, resolve_suite

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
URL_LINE = re.compile(r"(http://\S+/v1)\b")
SuiteArg = Suite | str | Path


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def load_suites(extra: Sequence[SuiteArg] = (), bundled: bool = True,
                warn: Callable[[str], None] | None = None) -> list[Suite]:
    """The suites the simulator knows: ``extra`` (Suite objects, names or paths) first, then
    every suite on the search path when ``bundled`` (unloadable ones are skipped with a warning)."""
    suites: list[Suite] = []
    for s in extra:
        suites.append(s if isinstance(s, Suite) else resolve_suite(str(s)))
    if bundled:
        names = {s.name for s in suites}
        for name, path in available_suites().items():
            if name in names:
                continue
            try:
                suites.append(load_suite(path))
            except SuiteError as e:
                if warn:
                    warn(f"skipping suite {name}: {str(e).splitlines()[0]}")
    return suites


def build_app(*, suites: Sequence[SuiteArg] = (), bundled: bool = True, seed: int = 0,
              fault: str | FaultPlan | None = None, fault_seed: int = 0,
              latency_ms: str | float | Latency | None = None, retry_after: float = 1.0,
              hang_s: float = 600.0) -> SimApp:
    """A simulator app; ``fault`` like ``"429=0.2,500=0.05"``, ``latency_ms`` like ``50`` or
    ``"lognormal:50:0.5"``."""
    plan = fault if isinstance(fault, FaultPlan) else parse_faults(fault, seed=fault_seed)
    if isinstance(latency_ms, Latency):
        latency = latency_ms
    else:
        latency = parse_latency(None if latency_ms is None else str(latency_ms), seed=fault_seed)
    knowledge = Knowledge(load_suites(suites, bundled), seed=seed)
    config = SimConfig(seed=seed, fault=plan, latency=latency, retry_after_s=retry_after, hang_s=hang_s)
    return SimApp(knowledge, config)


def bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def root_url(url: str) -> str:
    """``http://host:port/v1`` → ``http://host:port`` (the Anthropic SDK's base URL)."""
    return url.removesuffix("/").removesuffix("/v1")


def stats_url(url: str) -> str:
    return root_url(url) + "/sim/stats"


def _config(app: SimApp, graceful_s: int) -> uvicorn.Config:
    return uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", ws="none",
                          loop="uvloop" if _has("uvloop") else "asyncio",
                          http="httptools" if _has("httptools") else "h11",
                          timeout_graceful_shutdown=graceful_s, timeout_keep_alive=30, backlog=4096)


@contextlib.contextmanager
def running_sim(*, host: str = DEFAULT_HOST, port: int = 0, app: SimApp | None = None,
                suites: Sequence[SuiteArg] = (), bundled: bool = True, seed: int = 0,
                fault: str | FaultPlan | None = None, fault_seed: int = 0,
                latency_ms: str | float | Latency | None = None, retry_after: float = 1.0,
                hang_s: float = 600.0, startup_timeout: float = 15.0) -> Iterator[str]:
    """Serve the simulator on loopback in a background thread; yields its base URL
    (``http://127.0.0.1:PORT/v1``). Options as for ``build_app`` (or pass a built ``app``)."""
    sim = app or build_app(suites=suites, bundled=bundled, seed=seed, fault=fault, fault_seed=fault_seed,
                           latency_ms=latency_ms, retry_after=retry_after, hang_s=hang_s)
    sock = bind(host, port)
    server = uvicorn.Server(_config(sim, graceful_s=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="probe-sim", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the simulator did not start")
        time.sleep(0.005)
    try:
        yield base_url(host, sock.getsockname()[1])
    finally:
        sim.close()
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def serve(app: SimApp, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          ready: Callable[[str], None] | None = None) -> None:
    """Serve in the foreground until SIGINT/SIGTERM; ``ready(url)`` once it accepts requests."""
    sock = bind(host, port)
    config = _config(app, graceful_s=1)
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.005)
        if server.started and ready is not None:
            ready(base_url(host, sock.getsockname()[1]))
        await task

    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(main())
    finally:
        app.close()
        sock.close()


@dataclass
class SimProcess:
    """A simulator running as a child process."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid


@contextlib.contextmanager
def sim_process(*args: str, host: str = DEFAULT_HOST, port: int = 0, startup_timeout: float = 60.0,
                python: str | None = None) -> Iterator[SimProcess]:
    """Run ``python -m probe.sim serve --host H --port P ARGS…`` and yield once it prints its URL;
    the process is terminated (then killed) on exit. Its stderr goes to a temporary log file."""
    cmd = [python or sys.executable, "-m", "probe.sim", "serve", "--host", host, "--port", str(port), *args]
    with tempfile.NamedTemporaryFile(prefix="probe-sim-", suffix=".log", delete=False) as log:
        log_path = Path(log.name)
    with log_path.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
    try:
        url = _wait_for_url(proc, startup_timeout, log_path)
        yield SimProcess(base_url=url, process=proc, log=log_path)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        log_path.unlink(missing_ok=True)


def _wait_for_url(proc: subprocess.Popen[bytes], timeout: float, log: Path) -> str:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    seen = b""
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=0.1):
                if proc.poll() is not None:
                    break
                continue
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
            m = URL_LINE.search(line.decode(errors="replace"))
            if m:
                return m.group(1)
    finally:
        sel.close()
    proc.kill()
    proc.wait()
    detail = log.read_text(errors="replace")[-2000:] + seen.decode(errors="replace")
    raise RuntimeError(f"the simulator subprocess did not report its URL: {detail.strip()}")
