"""On the simulator's overconfident persona (a real run: runner → HTTP → simulator → SQLite), held-out
ECE after temperature scaling and after isotonic regression is lower than before."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from probe.runner.run import close_providers, execute, make_plan, new_run, open_providers
from probe.runner.spec import RunSpec
from probe.sim import running_sim
from probe.storage import Store
from providers import RetryPolicy

from .conftest import Cli

MODEL = "sim/overconfident"


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    db = tmp_path_factory.mktemp("sim") / "probe.db"
    spec = RunSpec.model_validate({"suites": ["arithmetic"], "models": [MODEL], "sources": ["token"],
                                   "variants": ["plain"], "limit": 800, "concurrency": 64})
    with running_sim() as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIM_BASE_URL", url)
        store = Store(db)
        plan = make_plan(spec)
        info = new_run(plan, store)
        providers = open_providers(spec)

        async def go() -> None:
            try:
                await execute(plan, store, info, providers, RetryPolicy.no_wait())
            finally:
                await close_providers(providers)

        asyncio.run(go())
        store.close()
    yield db, info.run_id


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
def test_held_out_ece_drops_after_recalibration(sim_db: tuple[Path, str], cli: Cli, tmp_path: Path,
                                                method: str) -> None:
    db, run_id = sim_db
    code, out, _ = cli("calibrate", "fit", run_id, "--model", MODEL, "--source", "token", "--method", method,
                       "-o", str(tmp_path / "cal.json"), "--db", str(db), "--json")
    assert code == 0
    held = json.loads(out)["held_out"]
    before, after = held["before"], held["after"]
    assert before["n"] == after["n"] and held["n_fit"] + after["n"] == 800  # disjoint halves
    assert before["ece"] > 0.08  # the persona overstates: γ = 0.4
    assert after["ece"] < before["ece"]
    assert after["accuracy"] == before["accuracy"]


def test_report_on_the_simulator_run(sim_db: tuple[Path, str], cli: Cli) -> None:
    db, run_id = sim_db
    code, out, _ = cli("report", run_id, "--db", str(db), "--format", "json", "--resamples", "200")
    assert code == 0
    g = next(g for g in json.loads(out)["groups"] if g["variant"] == "plain")
    assert g["n"] == g["n_ok"] == 800 and g["status_counts"] == {"ok": 800}
    assert g["signed_ece"] > 0.05 and g["ece_ci"][0] > 0.05  # overconfident, and the interval says so
