"""The runner end to end against the simulator: calibration ground truth, unavailable sources,
the cache, and a fault-injected run."""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path

import numpy as np
import pytest

from probe.analysis import build_report
from probe.errors import Failure
from probe.record import Record
from probe.runner.run import close_providers, execute, make_plan, new_run, open_providers
from probe.runner.spec import RunSpec
from probe.sim import running_sim
from probe.storage import Store
from providers import RetryPolicy
from tests.runner.conftest import chat_calls


def run_spec(store: Store, spec: RunSpec, policy: RetryPolicy | None = None) -> str:
    plan = make_plan(spec)
    info = new_run(plan, store)
    providers = open_providers(spec)

    async def go() -> None:
        try:
            await execute(plan, store, info, providers, policy or RetryPolicy.no_wait())
        finally:
            await close_providers(providers)

    asyncio.run(go())
    return info.run_id


def noise_bound(records: list[Record], bins: int = 10) -> float:
    """ECE a perfectly calibrated model stays under with high probability on these records: each
    bin's |accuracy - confidence| within 3 binomial standard errors, weighted as ECE weights bins."""
    conf = np.array([r.confidence for r in records], dtype=float)
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    n = len(conf)
    bound = 0.0
    for b in range(bins):
        in_bin = conf[idx == b]
        if len(in_bin):
            p = float(in_bin.mean())
            bound += len(in_bin) / n * 3 * math.sqrt(max(p * (1 - p), 1e-4) / len(in_bin))
    return bound


def test_calibrated_is_calibrated_and_overconfident_is_not(sim_env: str, tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    spec = RunSpec.model_validate({"suites": ["arithmetic"], "models": ["sim/calibrated", "sim/overconfident"],
                                   "sources": ["token"], "variants": ["plain"], "limit": 2000, "concurrency": 64})
    run_id = run_spec(store, spec)
    records = store.records(run_id)
    report = build_report(store.get_run(run_id), records)
    groups = {(g.model, g.variant): g for g in report.groups if g.source == "token"}
    cal, over = groups[("sim/calibrated", "plain")], groups[("sim/overconfident", "plain")]
    assert cal.n_ok == over.n_ok == 2000
    cal_bound = noise_bound([r for r in records if r.model == "sim/calibrated"])
    # derived from binomial noise on these very bins (about 0.06 here); observed ECE is ~0.02
    assert cal.ece is not None and cal.ece < cal_bound
    assert over.ece is not None and over.ece > cal_bound and over.ece > 2 * cal.ece
    assert over.signed_ece is not None and over.signed_ece > 0.05


def test_nologprobs_gives_unavailable_token_and_ptrue_but_numbers_elsewhere(sim_env: str, tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    spec = RunSpec.model_validate({"suites": ["demo"], "models": ["sim/nologprobs"], "limit": 20})
    run_id = run_spec(store, spec)
    records = store.records(run_id)
    by_source: dict[str, list[Record]] = {}
    for r in records:
        by_source.setdefault(r.source, []).append(r)
    for source in ("token", "ptrue"):
        assert by_source[source] and all(r.status.startswith("unavailable:") for r in by_source[source])
        assert all(r.confidence is None and r.correct is None for r in by_source[source])
    for source in ("verbal", "consistency"):
        ok = [r for r in by_source[source] if r.status == "ok"]
        assert len(ok) >= 0.9 * len(by_source[source])
        assert all(r.confidence is not None and 0 <= r.confidence <= 1 for r in ok)
    assert len(records) == store.get_run(run_id).planned_records


def test_identical_rerun_makes_zero_calls(sim_env: str, tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    spec = RunSpec.model_validate({"suites": ["demo"], "models": ["sim/calibrated"], "limit": 10})
    before = chat_calls(sim_env)
    first = run_spec(store, spec)
    made = chat_calls(sim_env) - before
    assert made > 0
    second = run_spec(store, spec)
    assert chat_calls(sim_env) - before == made  # the second run was served from the cache
    strip = {"run_id", "created_at", "latency_s"}
    a = {(r.item_id, r.variant, r.source): r.model_dump(exclude=strip) for r in store.records(first)}
    b = {(r.item_id, r.variant, r.source): r.model_dump(exclude=strip) for r in store.records(second)}
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == b[k], k
    refreshed = run_spec(store, spec.model_copy(update={"refresh": True}))
    assert chat_calls(sim_env) - before == 2 * made
    assert len(store.records(refreshed)) == len(a)


def test_faults_become_statuses_and_nothing_goes_missing(tmp_path: Path) -> None:
    with running_sim(fault="429=0.2,500=0.05,malformed=0.02", retry_after=0.0) as url:
        os.environ["SIM_BASE_URL"] = url
        try:
            store = Store(tmp_path / "p.db")
            spec = RunSpec.model_validate({"suites": ["arithmetic"], "models": ["sim/calibrated"],
                                           "sources": ["token"], "variants": ["plain"], "limit": 500})
            run_id = run_spec(store, spec, RetryPolicy.no_wait(max_attempts=2))
        finally:
            del os.environ["SIM_BASE_URL"]
    records = store.records(run_id)
    assert len(records) == 500
    assert len({r.item_id for r in records}) == 500
    statuses = {r.status for r in records}
    assert "ok" in statuses
    assert statuses <= {"ok", "error:rate_limit", "error:transient", "error:malformed"}
    assert statuses - {"ok"}, "with 27 % faults and 2 attempts some calls must fail"
    for r in records:
        if r.status.startswith("error:"):
            assert r.confidence is None and r.correct is None and r.error


def test_auth_failure_stops_the_run_and_says_how_to_resume(tmp_path: Path) -> None:
    with running_sim(fault="401=1.0") as url:
        os.environ["SIM_BASE_URL"] = url
        try:
            store = Store(tmp_path / "p.db")
            spec = RunSpec.model_validate({"suites": ["arithmetic"], "models": ["sim/calibrated"],
                                           "sources": ["token"], "variants": ["plain"], "limit": 200,
                                           "concurrency": 2})
            with pytest.raises(Failure, match="auth") as e:
                run_spec(store, spec)
            calls = chat_calls(url)
        finally:
            del os.environ["SIM_BASE_URL"]
    assert "probe run --resume" in str(e.value)
    (info,) = store.list_runs()
    assert info.status == "failed" and info.message and "auth" in info.message
    records = store.records(info.run_id)
    assert records and all(r.status == "error:auth" for r in records)
    assert calls < 20, "the run must stop instead of failing 200 times"
