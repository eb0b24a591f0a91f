"""CLI surface of batch mode: the dry run's live vs batch cost, user mistakes as clear errors, and a
``probe run --batch`` → ``probe batch collect`` round trip in process (vendor on a 127.0.0.1 port)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.errors import UsageError
from tests.batch.fakevendor import LoopbackVendor

runner = CliRunner()


def _env(monkeypatch: pytest.MonkeyPatch, loopback: LoopbackVendor) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli-0123456789")


def test_dry_run_shows_live_and_batch_cost(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli-0123456789")
    args = ["run", "--dry-run", "--suite", "demo", "--model", "openai/gpt-4o-mini", "--model", "sim/calibrated",
            "--limit", "4", "--db", str(tmp_path / "p.db")]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    cost = {m["model"]: m for m in out["cost"]["models"]}
    mini, sim = cost["openai/gpt-4o-mini"], cost["sim/calibrated"]
    assert mini["live_usd"] > 0 and abs(mini["batch_usd"] - mini["live_usd"] / 2) < 1e-12
    assert mini["calls"] == sum(x["calls"] for x in out["plan"] if x["model"] == "openai/gpt-4o-mini")
    assert sim["live_usd"] is None and sim["batch_usd"] is None and sim["input_tokens"] > 0
    assert "Estimate only" in out["cost"]["note"] and "2026-03" in out["cost"]["note"]
    text = runner.invoke(app, args)
    assert text.exit_code == 0
    assert "estimated cost: live vs batch" in text.stdout and "no price known" in text.stdout


def test_batch_refuses_models_without_a_batch_engine(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    res = runner.invoke(app, ["run", "--batch", "--suite", "demo", "--model", "sim/calibrated", "--limit", "1",
                              "--db", str(db)])
    assert isinstance(res.exception, UsageError) and "cannot go through a batch engine" in str(res.exception)
    from probe.storage import Store

    assert Store(db).list_runs() == []  # refused before a run was created


def test_collect_errors_name_the_problem(tmp_path: Path) -> None:
    res = runner.invoke(app, ["batch", "collect", "nosuch", "--db", str(tmp_path / "none.db")])
    assert isinstance(res.exception, UsageError) and "no database" in str(res.exception)
    db = tmp_path / "p.db"
    from probe.storage import Store

    Store(db)
    res = runner.invoke(app, ["batch", "status", "nosuch", "--db", str(db)])
    assert isinstance(res.exception, UsageError) and "no run 'nosuch'" in str(res.exception)


def test_run_batch_then_collect_in_process(monkeypatch: pytest.MonkeyPatch, loopback: LoopbackVendor,
                                           tmp_path: Path) -> None:
    _env(monkeypatch, loopback)
    db = str(tmp_path / "p.db")
    res = runner.invoke(app, ["run", "--batch", "--suite", "demo", "--model", "openai/gpt-4o-mini", "--limit", "2",
                              "--variant", "plain", "--source", "verbal", "--db", db])
    assert res.exit_code == 0, res.output
    assert "submitted (1)" in res.stdout and "probe batch collect" in res.stdout
    from probe.storage import Store

    (info,) = Store(db).list_runs()
    status = runner.invoke(app, ["batch", "status", info.run_id[:12], "--db", db])
    assert status.exit_code == 0 and "in_progress" in status.stdout
    done = runner.invoke(app, ["batch", "collect", info.run_id, "--db", db, "--wait", "--interval", "0"])
    assert done.exit_code == 0, done.output
    assert "collected (1)" in done.stdout and "completed" in done.stdout
    assert Store(db).status_counts(info.run_id) == {"ok": 4}
    assert loopback.fake.calls["live:openai"] == 0
    # a live-only run has no batches to collect
    live = runner.invoke(app, ["run", "--suite", "demo", "--model", "openai/gpt-4o-mini", "--limit", "1",
                               "--variant", "plain", "--source", "verbal", "--db", db, "--json"])
    assert live.exit_code == 0, live.output
    res = runner.invoke(app, ["batch", "collect", json.loads(live.stdout)["run_id"], "--db", db])
    assert isinstance(res.exception, UsageError) and "no batch submissions" in str(res.exception)
