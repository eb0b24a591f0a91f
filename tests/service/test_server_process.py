"""A real `probe serve` process (uvicorn) on a free loopback port, exercised with plain HTTP:
token auth, a run, SIGTERM in the middle of it, and a restart that completes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from probe.errors import UsageError
from probe.service.config import ServiceConfig, check_exposure
from probe.sim import running_sim
from probe.storage import Store
from tests.service._helpers import free_port

TOKEN = "process-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def call(base: str, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode()


@contextmanager
def serve(db: Path, sim_url: str, log: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = {**os.environ, "PROBE_API_TOKEN": TOKEN, "SIM_BASE_URL": sim_url}
    with log.open("ab") as err:
        proc = subprocess.Popen([sys.executable, "-m", "probe", "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--db", str(db), "--workers", "1", "--tick", "0.2", *extra],
                                stdout=err, stderr=err, stdin=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if call(base, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"probe serve did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def stopped_gracefully(proc: subprocess.Popen[bytes], log: Path) -> bool:
    """uvicorn finishes its shutdown, then re-raises SIGTERM so the exit status says why it stopped."""
    code = proc.wait(30)
    text = log.read_text()
    return code in (0, -signal.SIGTERM) and text.rstrip().endswith(f"Finished server process [{proc.pid}]") and \
        "Application shutdown complete." in text


@pytest.fixture(scope="module")
def slow_sim() -> Iterator[str]:
    with running_sim(latency_ms=100) as url:
        yield url


def test_sigterm_during_a_run_then_a_restart_completes_it(tmp_path: Path, slow_sim: str) -> None:
    db, log = tmp_path / "probe.db", tmp_path / "serve.log"
    spec = {"suites": ["arithmetic"], "models": ["sim/calibrated"], "sources": ["token"], "variants": ["plain"],
            "limit": 60, "concurrency": 2}
    with serve(db, slow_sim, log, "--grace", "0") as (base, proc):
        assert call(base, "GET", "/v1/runs")[0] == 401
        assert call(base, "GET", "/v1/runs", headers={"Authorization": "Bearer nope-nope-nope-nope"})[0] == 401
        assert call(base, "GET", "/docs", headers=AUTH)[0] == 200
        status, body = call(base, "POST", "/v1/runs", spec, AUTH)
        assert status == 202, body
        run_id = body["run_id"]
        for _ in range(600):
            view = call(base, "GET", f"/v1/runs/{run_id}", headers=AUTH)[1]
            if view["progress"]["records"] >= 6:
                break
            time.sleep(0.05)
        assert view["status"] == "running"
        proc.send_signal(signal.SIGTERM)
        assert stopped_gracefully(proc, log)
        assert f"interrupted run(s) {run_id} will resume" in log.read_text()
    with Store(db) as store:
        stopped = store.get_run(run_id)
        done = sum(store.status_counts(run_id).values())
    assert stopped.status == "interrupted"
    assert 6 <= done < 60

    with serve(db, slow_sim, log) as (base, proc):  # the restart adopts and resumes it on its own
        for _ in range(1200):
            view = call(base, "GET", f"/v1/runs/{run_id}", headers=AUTH)[1]
            if view["status"] in ("completed", "failed"):
                break
            time.sleep(0.05)
        assert view["status"] == "completed", view
        assert view["progress"]["records"] == 60 and view["counts"] == {"ok": 60}
        status, metrics = call(base, "GET", f"/v1/runs/{run_id}/metrics", headers=AUTH)
        assert status == 200 and metrics["run_id"] == run_id
        assert {(g["source"], g["n"]) for g in metrics["groups"]} == {("token", 60)}
        status, text = call(base, "GET", "/metrics", headers=AUTH)
        assert status == 200 and 'probe_runs{status="completed"} 1' in text
        proc.send_signal(signal.SIGTERM)
        assert stopped_gracefully(proc, log)
    assert "resuming run " + run_id in log.read_text()


def test_refuses_a_non_loopback_host_without_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PROBE_API_TOKEN"}
    r = subprocess.run([sys.executable, "-m", "probe", "serve", "--host", "0.0.0.0", "--port", str(free_port()),
                        "--db", str(tmp_path / "p.db")], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert "PROBE_API_TOKEN" in r.stderr and "Traceback" not in r.stderr


def test_a_short_token_is_refused_and_never_echoed() -> None:
    config = ServiceConfig(host="0.0.0.0", token="short")
    with pytest.raises(UsageError) as e:
        check_exposure(config)
    assert "too short" in str(e.value) and "short" not in str(e.value).replace("too short", "")
    check_exposure(ServiceConfig(host="127.0.0.1"))  # loopback without a token is fine
    check_exposure(ServiceConfig(host="0.0.0.0", token=TOKEN))
    assert "process-test" not in repr(ServiceConfig(token=TOKEN))
