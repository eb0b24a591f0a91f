"""Benchmark: many clients reading a finished run's metrics from `probe serve`.

    /work/venv/bin/python bench/service_load.py [--clients 200] [--seconds 20] [--records 10000]
                                                [--db PATH] [--peer-seconds 5]

Starts the simulator and `probe serve` (uvicorn, one process, token auth on) as child processes,
makes a finished run of ``--records`` records through the API (or reuses the run in ``--db``), then
``--clients`` concurrent aiohttp clients GET /v1/runs/{id}/metrics for ``--seconds``. Prints
requests/s, p50/p99 latency and errors, and the same figures for GET /healthz measured the same
way (the peer: what the server does with a trivial body), so the metrics figure reads as a ratio.
The load generator shares the machine with the server: the figures are for both on one host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from probe.sim import sim_process

SOURCES = ["token", "ptrue", "verbal", "consistency"]  # 1 + 1 + 2 (verbal forms) + 1 records per item


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http(method: str, url: str, token: str, body: Any = None) -> Any:
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


@dataclass
class Load:
    """What one load phase measured."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    wrong: int = 0
    elapsed: float = 0.0

    def line(self, name: str) -> str:
        lat = sorted(self.latencies)
        if not lat:
            return f"{name}: no successful request, errors {self.errors}"
        p50 = lat[len(lat) // 2] * 1000
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
        return (f"{name}: {len(lat) / self.elapsed:,.0f} requests/s over {self.elapsed:.1f} s "
                f"({len(lat):,} ok), p50 {p50:.1f} ms, p99 {p99:.1f} ms, mean {statistics.fmean(lat) * 1000:.1f} ms, "
                f"errors {self.errors}, wrong bodies {self.wrong}")

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0


async def load(url: str, token: str, clients: int, seconds: float, expect: bytes | None) -> Load:
    result = Load()
    connector = aiohttp.TCPConnector(limit=clients)
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(connector=connector, headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=60)) as session:
        stop_at = time.perf_counter() + seconds

        async def client() -> None:
            while time.perf_counter() < stop_at:
                t0 = time.perf_counter()
                try:
                    async with session.get(url) as resp:
                        body = await resp.read()
                        ok = resp.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    ok, body = False, b""
                if not ok:
                    result.errors += 1
                    continue
                result.latencies.append(time.perf_counter() - t0)
                if expect is not None and body != expect:
                    result.wrong += 1

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        result.elapsed = time.perf_counter() - start
    return result


def wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"probe serve exited:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"probe serve did not start:\n{log.read_text()}")


def finished_run(base: str, token: str, records: int) -> str:
    """A completed run with ``records`` records: the newest such run in the database, or a new one."""
    for run in http("GET", base + "/v1/runs?status=completed&limit=1000", token)["runs"]:
        if run["planned_records"] == records:
            print(f"reusing run {run['run_id']} ({records:,} records)")
            return str(run["run_id"])
    per_item = 5
    if records % per_item:
        sys.exit(f"--records must be a multiple of {per_item} (records per arithmetic item over {SOURCES})")
    spec = {"suites": ["arithmetic"], "models": ["sim/calibrated"], "sources": SOURCES, "variants": ["plain"],
            "limit": records // per_item, "concurrency": 64}
    t0 = time.perf_counter()
    run_id = str(http("POST", base + "/v1/runs", token, spec)["run_id"])
    while True:
        view = http("GET", f"{base}/v1/runs/{run_id}", token)
        if view["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.5)
    if view["status"] != "completed" or view["progress"]["records"] != records:
        sys.exit(f"the run did not complete: {view['status']} {view['progress']} {view['message']}")
    print(f"made run {run_id}: {records:,} records in {time.perf_counter() - t0:.1f} s through the API")
    return run_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--peer-seconds", type=float, default=5.0)
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--db", type=Path, default=None, help="Database to use (kept); default: a temporary one.")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="probe-service-load-")
    db = args.db or Path(tmp.name) / "probe.db"
    log = Path(tmp.name) / "serve.log"
    token = secrets.token_urlsafe(24)
    with sim_process() as sim:
        port = free_port()
        env = {**os.environ, "PROBE_API_TOKEN": token, "SIM_BASE_URL": sim.base_url}
        with log.open("wb") as err:
            server = subprocess.Popen([sys.executable, "-m", "probe", "serve", "--port", str(port), "--db", str(db),
                                       "--log-level", "warning"], stdout=err, stderr=err, env=env,
                                      stdin=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, server, log)
            run_id = finished_run(base, token, args.records)
            url = f"{base}/v1/runs/{run_id}/metrics"
            t0 = time.perf_counter()
            req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=300) as resp:
                body = resp.read()
            cold = time.perf_counter() - t0
            groups = len(json.loads(body)["groups"])
            print(f"first metrics request (computes the report: {groups} groups, {len(body):,} bytes): "
                  f"{cold * 1000:.0f} ms; later requests are served from the per-run cache")
            peer = asyncio.run(load(f"{base}/healthz", token, args.clients, args.peer_seconds, None))
            got = asyncio.run(load(url, token, args.clients, args.seconds, body))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
    print(f"{args.clients} concurrent clients, server and load generator on the same {os.cpu_count()}-core host")
    print(got.line(f"GET /v1/runs/{{id}}/metrics ({len(body):,} bytes)"))
    print(peer.line("GET /healthz (peer)"))
    print(f"metrics / healthz requests per second: {got.rps / peer.rps:.2f}" if peer.rps else "")
    bad = got.errors + got.wrong
    print("errors: none" if not bad else f"ERRORS: {got.errors} failed, {got.wrong} wrong bodies")
    tmp.cleanup()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
