"""Fixtures for batch tests: a clean provider environment, the fake vendor, plan and record helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probe.record import Record
from probe.runner.run import Plan, make_plan
from probe.runner.spec import validate_spec
from tests.batch.fakevendor import FakeVendor, LoopbackVendor

IGNORED = {"run_id", "created_at", "latency_s"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No provider variable leaks in from the real environment."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL", "_API_KEY_FILE", "_AD_TOKEN", "_ENDPOINT", "_API_VERSION")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROBE_CACHE_DIR", str(tmp_path / "cache"))
    yield


@pytest.fixture
def loopback() -> Iterator[LoopbackVendor]:
    srv = LoopbackVendor(FakeVendor()).start()
    try:
        yield srv
    finally:
        srv.stop()


def plan_for(model: str, *, limit: int = 6, sources: str = "token,ptrue,verbal,consistency", **extra: Any) -> Plan:
    """The demo suite's first ``limit`` questions (multiple choice and short answer), one variant."""
    spec = validate_spec({"suites": ["demo"], "models": [model], "limit": limit, "variants": ["plain"],
                          "sources": sources, "samples": 3, **extra}, "test")
    return make_plan(spec)


def by_key(records: list[Record]) -> dict[tuple[str, str, str, str, str, int], dict[str, Any]]:
    """Records keyed like the records table, as dicts without run id, timestamps and latency."""
    return {(r.model, r.suite, r.item_id, r.variant, r.source, r.sample):
            {k: v for k, v in r.model_dump(mode="json").items() if k not in IGNORED} for r in records}


def assert_same_records(got: list[Record], want: list[Record]) -> None:
    g, w = by_key(got), by_key(want)
    assert sorted(g) == sorted(w)
    diffs = [(k, f, g[k][f], w[k][f]) for k in w for f in w[k] if g[k][f] != w[k][f]]
    assert not diffs, diffs[:5]
