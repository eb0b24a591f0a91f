"""`probe schedule add|list|remove|run-due` against the simulator; the same JSON as the HTTP API."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app as cli
from probe.cli import main
from probe.runner.spec import RunSpec
from probe.service.scheduler import ScheduleSpec, add_schedule, fires_of
from probe.storage import Store
from tests.service.conftest import MakeClient

RUN = ["--suite", "demo", "--model", "sim/calibrated", "--limit", "3", "--source", "token"]


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def test_add_list_remove_and_the_api_sees_the_same(tmp_path: Path, make_client: MakeClient) -> None:
    db = str(tmp_path / "probe.db")
    added = json.loads(invoke("schedule", "add", "--cron", "0 3 * * 1", "--timezone", "Europe/Berlin", *RUN,
                              "--webhook", "http://127.0.0.1:9/hook", "--db", db, "--json"))
    assert added["cron"] == "0 3 * * 1" and added["run"]["suites"] == ["demo"]
    listed = json.loads(invoke("schedule", "list", "--db", db, "--json"))
    assert listed == {"schedules": [added]}
    client = make_client(db=Path(db))
    assert client.get("/v1/schedules").json() == listed
    assert added["schedule_id"] in invoke("schedule", "list", "--db", db)
    assert "removed" in invoke("schedule", "remove", added["schedule_id"], "--db", db)
    assert client.get("/v1/schedules").json() == {"schedules": []}


def test_run_due_claims_due_schedules_once(tmp_path: Path, sim_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIM_BASE_URL", sim_url)
    db = tmp_path / "probe.db"
    spec = RunSpec.model_validate({"suites": ["demo"], "models": ["sim/calibrated"], "limit": 3,
                                   "sources": ["token"]})
    with Store(db) as store:  # added five hours ago: four hourly fires were missed since
        sched = add_schedule(store, ScheduleSpec(cron="0 * * * *", run=spec),
                             datetime.now(UTC) - timedelta(hours=5))
    out = json.loads(invoke("schedule", "run-due", "--db", str(db), "--json"))
    assert [r["status"] for r in out["runs"]] == ["completed"] and out["alerts"] == []
    assert json.loads(invoke("schedule", "run-due", "--db", str(db), "--json")) == {"runs": [], "alerts": []}
    assert "nothing due" in invoke("schedule", "run-due", "--db", str(db))
    # --now fires out of turn; the second run is compared with the first (same model: no alert)
    now = json.loads(invoke("schedule", "run-due", "--db", str(db), "--schedule", sched.schedule_id, "--now",
                            "--json"))
    assert [r["status"] for r in now["runs"]] == ["completed"] and now["alerts"] == []
    with Store(db) as store:
        assert [f.run_id for f in fires_of(store, sched.schedule_id)] == [out["runs"][0]["run_id"],
                                                                           now["runs"][0]["run_id"]]
        assert all(r.status == "completed" and r.spec["refresh"] for r in store.list_runs())


def test_bad_input_exits_2_naming_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "probe.db")
    for var in ("OPENAI_API_KEY", "OPENAI_API_KEY_FILE"):
        monkeypatch.delenv(var, raising=False)

    def probe(*args: str) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", ["probe", *args])
        with pytest.raises(SystemExit) as e:
            main()
        return int(e.value.code or 0), capsys.readouterr().err

    code, err = probe("schedule", "add", "--cron", "0 3 * *", *RUN, "--db", db)
    assert code == 2 and "--cron" in err and "5-field" in err
    code, err = probe("schedule", "add", "--cron", "0 3 * * 1", "--timezone", "Moon/Base", *RUN, "--db", db)
    assert code == 2 and "--timezone" in err
    code, err = probe("schedule", "add", "--cron", "0 3 * * 1", "--suite", "demo", "--model", "openai/gpt-4.1-mini",
                      "--db", db)
    assert code == 2 and "OPENAI_API_KEY" in err
    code, err = probe("schedule", "remove", "s-nope", "--db", db)
    assert code == 2 and "no database" in err
    Store(db).close()
    code, err = probe("schedule", "remove", "s-nope", "--db", db)
    assert code == 2 and "s-nope" in err
    code, err = probe("schedule", "run-due", "--now", "--db", db)
    assert code == 2 and "--schedule" in err
