"""SIGKILL a real `probe run` process in flight, resume it, and prove through the simulator's
counters that no completed request was sent again and every planned record exists once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from probe.sim import sim_process
from tests.runner.conftest import chat_calls

ITEMS = 240


def cached(db: Path) -> int:
    c = sqlite3.connect(db)
    try:
        return int(c.execute("SELECT COUNT(*) FROM cache").fetchone()[0])
    except sqlite3.OperationalError:  # the runner has not created its tables yet
        return 0
    finally:
        c.close()


def test_sigkill_then_resume_sends_only_what_had_not_completed(tmp_path: Path) -> None:
    db = tmp_path / "probe.db"
    with sim_process("--latency-ms", "100") as sim:
        env = {**os.environ, "SIM_BASE_URL": sim.base_url}
        cmd = [sys.executable, "-m", "probe", "run", "--suite", "arithmetic", "--model", "sim/calibrated",
               "--source", "token", "--variant", "plain", "--limit", str(ITEMS), "--concurrency", "8",
               "--db", str(db), "--json"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if db.exists() and cached(db) >= 40:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        served_before = chat_calls(sim.base_url)
        done_before = cached(db)
        assert 40 <= done_before < ITEMS, "the kill must land mid-run"
        with sqlite3.connect(db) as c:
            run_id, status = c.execute("SELECT run_id, status FROM runs").fetchone()
        assert status == "running"  # killed: nobody could mark it

        out = subprocess.run([sys.executable, "-m", "probe", "run", "--resume", run_id, "--db", str(db), "--json"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout)
        assert summary["run_id"] == run_id and summary["status"] == "completed"
        sent_on_resume = chat_calls(sim.base_url) - served_before
    # exactly the requests whose responses were not stored were sent again: none that had completed
    assert sent_on_resume == ITEMS - done_before
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT item_id, COUNT(*) FROM records WHERE run_id = ? GROUP BY item_id",
                         (run_id,)).fetchall()
        statuses = {r[0] for r in c.execute("SELECT status FROM records WHERE run_id = ?", (run_id,))}
    assert len(rows) == ITEMS and all(n == 1 for _, n in rows)
    assert statuses == {"ok"}


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path: Path) -> None:
    db = tmp_path / "probe.db"
    with sim_process("--latency-ms", "100") as sim:
        env = {**os.environ, "SIM_BASE_URL": sim.base_url}
        cmd = [sys.executable, "-m", "probe", "run", "--suite", "arithmetic", "--model", "sim/calibrated",
               "--source", "token", "--variant", "plain", "--limit", "200", "--concurrency", "4", "--db", str(db)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (db.exists() and cached(db) >= 8):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        with sqlite3.connect(db) as c:
            run_id, status = c.execute("SELECT run_id, status FROM runs").fetchone()
        assert status == "interrupted"
        assert f"probe run --resume {run_id}" in err
        out = subprocess.run([sys.executable, "-m", "probe", "run", "--resume", run_id, "--db", str(db), "--json"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["status"] == "completed"
