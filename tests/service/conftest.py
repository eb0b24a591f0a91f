from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from probe.service.app import create_app
from probe.service.config import ServiceConfig
from probe.service.runtime import Runtime
from probe.sim import running_sim
from providers import RetryPolicy


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with running_sim() as url:
        yield url


@pytest.fixture(scope="module")
def slow_sim_url() -> Iterator[str]:
    """A simulator that takes 150 ms per request (runs last long enough to be caught mid-way)."""
    with running_sim(latency_ms=150) as url:
        yield url


class MakeClient:
    """Starts the app (lifespan and all) over one database per test; ``stop`` shuts one down gracefully."""

    def __init__(self, db: Path, sim_url: str) -> None:
        self.db = db
        self.sim_url = sim_url
        self.running: list[TestClient] = []

    def __call__(self, *, sim: str | None = None, runtime_kw: dict[str, Any] | None = None,
                 **config: Any) -> TestClient:
        cfg = ServiceConfig(db=config.pop("db", self.db), **{"tick_s": 3600.0, **config})
        rt = Runtime(cfg, env={"SIM_BASE_URL": sim or self.sim_url}, policy=RetryPolicy.no_wait(),
                     **(runtime_kw or {}))
        client = TestClient(create_app(cfg, rt))
        client.__enter__()
        self.running.append(client)
        return client

    def stop(self, client: TestClient) -> None:
        self.running.remove(client)
        client.__exit__(None, None, None)


@pytest.fixture
def make_client(tmp_path: Path, sim_url: str) -> Iterator[MakeClient]:
    maker = MakeClient(tmp_path / "probe.db", sim_url)
    yield maker
    for c in reversed(list(maker.running)):
        maker.stop(c)


FINAL = ("completed", "failed", "cancelled")


def wait_for(client: TestClient, run_id: str, statuses: tuple[str, ...] = ("completed", "failed", "cancelled"),
             timeout: float = 120.0, headers: dict[str, str] | None = None) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        view: dict[str, Any] = client.get(f"/v1/runs/{run_id}", headers=headers).json()
        if view["status"] in statuses and not (view["status"] in FINAL and view["progress"]["live"]):
            return view  # a finished run is waited for until the service is done with it (drift check)
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} still {view['status']} after {timeout} s: {view}")
        time.sleep(0.05)
