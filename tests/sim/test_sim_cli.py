"""``probe sim`` commands and the simulator as a child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.prompts import answer_prompt
from probe.sim import PERSONAS, sim_process, stats_url
from probe.suite import Suite

from .conftest import write_suite

runner = CliRunner()


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory, mini_suite: Suite) -> Path:
    return write_suite(tmp_path_factory.mktemp("suites") / "mini", mini_suite)


def test_truth_json_states_every_source(suite_dir: Path, mini_suite: Suite) -> None:
    res = runner.invoke(app, ["sim", "truth", "--persona", "overconfident", "--suite", str(suite_dir), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["persona"] == "overconfident" and data["suite"] == "mini" and data["samples"] == 5
    # the directory's suite.toml names no variants: probe's defaults, each stated separately
    assert [v["id"] for v in data["variants"]] == ["plain", "expert", "shuffled"]
    items = data["items"]
    ids = [q.id for q in mini_suite.questions]
    assert [(i["variant"], i["item_id"]) for i in items] == [(v, i) for v in ("plain", "expert", "shuffled")
                                                             for i in ids]
    by = {(i["variant"], i["item_id"]): i for i in items}
    for q in mini_suite.questions:
        plain, expert = by[("plain", q.id)], by[("expert", q.id)]
        assert expert["system_prompt"] and not plain["system_prompt"]
        # more overconfident under the system prompt: γ 0.4 → 0.3
        assert expert["token"]["confidence"] - expert["token"]["p_right"] >= \
            plain["token"]["confidence"] - plain["token"]["p_right"] - 0.05
    assert any(i["order"] is not None for i in items if i["variant"] == "shuffled")
    for item in items:
        for source in ("token", "ptrue", "verbal_numeric", "verbal_linguistic", "consistency"):
            s = item[source]
            assert s["available"] and 0 <= s["confidence"] <= 1 and 0 <= s["p_right"] <= 1
        assert item["token"]["confidence"] >= item["token"]["p_right"]  # overconfident
        assert sum(a["probability"] for a in item["consistency"]["by_agreeing"]) == pytest.approx(1.0)
    no_lp = runner.invoke(app, ["sim", "truth", "--persona", "sim-nologprobs", "--suite", str(suite_dir),
                                "--json", "--limit", "2"])
    rows = json.loads(no_lp.stdout)["items"]
    assert len(rows) == 6 and not rows[0]["token"]["available"] and rows[0]["token"]["confidence"] is None
    one = runner.invoke(app, ["sim", "truth", "--persona", "calibrated", "--suite", str(suite_dir), "--json",
                              "--variant", "shuffled", "--variant", "plain-form"])
    forms = json.loads(one.stdout)
    assert [v["id"] for v in forms["variants"]] == ["shuffled", "plain-form"]
    assert {i["variant"] for i in forms["items"]} == {"shuffled", None}
    for item in forms["items"]:
        assert item["token"]["confidence"] == pytest.approx(item["token"]["p_right"])  # calibrated in every form


def test_truth_table_and_personas(suite_dir: Path) -> None:
    res = runner.invoke(app, ["sim", "truth", "--persona", "calibrated", "--suite", str(suite_dir)])
    assert res.exit_code == 0 and "mc-france" in res.stdout and "mean p(right)" in res.stdout
    listed = runner.invoke(app, ["sim", "personas", "--json"])
    assert {p["model"] for p in json.loads(listed.stdout)} == {f"sim-{p}" for p in PERSONAS}


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "probe.sim", *args], capture_output=True, text=True, timeout=60)


def test_user_mistakes_exit_2_with_a_message(suite_dir: Path) -> None:
    bad_persona = _probe("truth", "--persona", "nobody", "--suite", str(suite_dir))
    assert bad_persona.returncode == 2 and "unknown persona 'nobody'" in bad_persona.stderr
    assert "Traceback" not in bad_persona.stderr
    bad_variant = _probe("truth", "--persona", "calibrated", "--suite", str(suite_dir), "--variant", "nope")
    assert bad_variant.returncode == 2 and "Traceback" not in bad_variant.stderr
    assert "no variant 'nope'" in bad_variant.stderr and "plain, expert, shuffled" in bad_variant.stderr
    bad_fault = _probe("serve", "--port", "0", "--no-bundled", "--fault", "429=2")
    assert bad_fault.returncode == 2 and "--fault" in bad_fault.stderr and "between 0 and 1" in bad_fault.stderr


def test_subprocess_serves_and_dies_on_kill(suite_dir: Path, mini_suite: Suite) -> None:
    q = mini_suite.questions[0]
    body = {"model": "sim-calibrated", "temperature": 0,
            "messages": [m.model_dump() for m in answer_prompt(q, mini_suite.variants[0]).messages]}
    with sim_process("--no-bundled", "--suite", str(suite_dir), "--fault", "500=1") as sim:
        assert sim.base_url.startswith("http://127.0.0.1:")
        models = httpx.get(sim.base_url + "/models", timeout=10).json()
        assert len(models["data"]) == len(PERSONAS)
        assert httpx.post(sim.base_url + "/chat/completions", json=body, timeout=10).status_code == 500
        ok = httpx.post(sim.base_url + "/chat/completions", json=body, headers={"X-Sim-Fault": "none"}, timeout=10)
        assert ok.json()["choices"][0]["message"]["content"] in "ABCD"
        counted = httpx.get(stats_url(sim.base_url), timeout=10).json()
        assert counted["by_persona_outcome"] == {"calibrated:500": 1, "calibrated:ok": 1}
        assert counted["by_endpoint"] == {"models": 1, "chat.completions": 2}
        os.kill(sim.pid, signal.SIGKILL)
        sim.process.wait(timeout=10)
        with pytest.raises(httpx.ConnectError):
            httpx.get(sim.base_url + "/models", timeout=5)


def test_subprocess_stops_cleanly_on_sigterm(suite_dir: Path) -> None:
    with sim_process("--no-bundled", "--suite", str(suite_dir)) as sim:
        sim.process.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it captured
        assert sim.process.wait(timeout=15) in (0, -signal.SIGTERM)
        with pytest.raises(httpx.ConnectError):
            httpx.get(sim.base_url + "/models", timeout=5)
