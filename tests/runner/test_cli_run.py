"""`probe run`, `--config`, `--dry-run` and `probe export` as a user runs them (real subprocesses)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from probe.storage import Store
from tests.runner.conftest import chat_calls


def probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "probe", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})})


def test_dry_run_sends_nothing_and_counts_calls(sim_url: str, tmp_path: Path) -> None:
    before = chat_calls(sim_url)
    out = probe("run", "--suite", "demo", "--model", "sim/calibrated", "--limit", "4", "--dry-run", "--json",
                "--db", str(tmp_path / "p.db"), env={"SIM_BASE_URL": sim_url})
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    calls = {row["source"]: row["calls"] for row in plan["plan"]}
    # 4 items x 3 variants: one answer call (token), one self-evaluation (ptrue), two verbal forms,
    # one n-sample call (the simulator takes n)
    assert calls == {"token": 12, "ptrue": 12, "verbal": 24, "consistency": 12}
    assert all(row["input_tokens"] > 0 for row in plan["plan"])
    assert chat_calls(sim_url) == before


def test_config_file_with_per_model_base_url_and_export(sim_url: str, tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'''
suites = ["capitals"]
sources = ["token", "consistency"]
variants = ["plain"]
limit = 5
samples = 3
[[models]]
model = "sim/calibrated"
base_url = "{sim_url}"
concurrency = 4
''')
    db = tmp_path / "p.db"
    env = {"SIM_BASE_URL": "http://127.0.0.1:9/v1"}  # unused: the config's base_url wins
    out = probe("run", "--config", str(config), "--db", str(db), "--json", env=env)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["status"] == "completed"
    assert {(s["source"], s["records"]) for s in summary["summary"]} == {("token", 5), ("consistency", 5)}
    exported = probe("export", summary["run_id"], "--format", "csv", "--db", str(db))
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(rows) == 10
    needed = {"model", "provider", "suite", "item_id", "variant", "source", "sample", "answer", "correct",
              "confidence", "status"}
    assert needed <= set(rows[0])
    lines = probe("export", summary["run_id"], "--format", "jsonl", "-o", str(tmp_path / "out" / "r.jsonl"),
                  "--db", str(db))
    assert lines.returncode == 0
    assert len((tmp_path / "out" / "r.jsonl").read_text().splitlines()) == 10


def test_bad_config_names_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('suites = ["capitals"]\nsamples = 1\n[[models]]\nmodel = "sim/calibrated"\nrpm = -3\n')
    out = probe("run", "--config", str(config), "--db", str(tmp_path / "p.db"))
    assert out.returncode == 2
    assert f"{config}: samples:" in out.stderr and f"{config}: models.0.rpm:" in out.stderr
    assert "Traceback" not in out.stderr
    db = tmp_path / "p.db"
    assert not db.exists() or Store(db).list_runs() == []  # nothing written half-way


def test_a_base_url_with_credentials_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('suites = ["capitals"]\n[[models]]\nmodel = "vllm/m"\n'
                      'base_url = "https://user:sk-secret-123@example.invalid/v1"\n')
    out = probe("run", "--config", str(config), "--db", str(tmp_path / "p.db"))
    assert out.returncode == 2
    assert "models.0.base_url" in out.stderr and "sk-secret-123" not in out.stderr + out.stdout
