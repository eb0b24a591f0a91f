"""A batch run interrupted after submission is collected by a later ``probe batch collect`` in a NEW process.

The vendor is the fake OpenAI batch API on a real 127.0.0.1 port (respx cannot reach a child process);
the children find it through OPENAI_BASE_URL. Process 1 submits and exits; process 2 waits on the batch
and is killed (SIGKILL) while it is still in progress; process 3 collects the ended batch, submits the
self-evaluation stage, collects that and completes the run. Its records equal a live run's.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from probe.batch import BatchStore
from probe.runner.run import new_run
from probe.storage import Store
from tests.batch.conftest import assert_same_records, plan_for
from tests.batch.fakevendor import FakeVendor, LoopbackVendor
from tests.batch.test_openai_lifecycle import _live

MODEL = "openai/gpt-4o-mini"
ARGS = ["--suite", "demo", "--model", MODEL, "--limit", "3", "--variant", "plain", "--samples", "3",
        "--source", "token,ptrue,verbal,consistency"]


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_BASE_URL", "_API_KEY_FILE", "_AD_TOKEN"))}
    return {**env, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test-child-0123456789"}


def _probe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "probe", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.timeout(240)
def test_collect_from_new_processes_after_interruption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeVendor(polls_until_done=1)
    fake.hold = True
    srv = LoopbackVendor(fake).start()
    try:
        env = _env(srv.url)
        db = tmp_path / "probe.db"

        # process 1: plan → submit → exit (nothing is waited for)
        sent = _json(_probe(env, "run", *ARGS, "--batch", "--db", str(db), "--json"))
        run_id = sent["run_id"]
        assert sent["status"] == "running" and not sent["complete"]
        assert [b["requests"] for b in sent["submitted"]] == [12]  # 3 items × (answer, 2 verbal, consistency)
        assert fake.calls["live:openai"] == 0

        # process 2: waits for the batch and is killed while it is still in progress
        polls = fake.calls["openai:retrieve"]
        waiting = subprocess.Popen([sys.executable, "-m", "probe", "batch", "collect", run_id, "--db", str(db),
                                    "--wait", "--interval", "0.05"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while fake.calls["openai:retrieve"] < polls + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting.poll() is None, "collect --wait ended although the batch is still running"
        waiting.kill()
        waiting.wait(10)
        assert fake.calls["openai:retrieve"] >= polls + 3

        status = _json(_probe(env, "batch", "status", run_id, "--db", str(db), "--json"))
        assert [(b["state"], b["vendor_status"]) for b in status["batches"]] == [("in_progress", "in_progress")]
        assert status["status"] == "running"

        # process 3: the vendor has finished; collect stage 1, submit and collect stage 2 (ptrue)
        fake.hold = False
        done = _json(_probe(env, "batch", "collect", run_id, "--db", str(db), "--wait", "--interval", "0.05",
                            "--json"))
        assert done["complete"] and done["status"] == "completed"
        assert fake.calls["openai:create"] == 2 and fake.calls["live:openai"] == 0
        assert {(s["source"], s["records"]) for s in done["summary"]} == {
            ("token", 3), ("ptrue", 3), ("verbal", 6), ("consistency", 3)}
        stored = BatchStore(Store(db)).batches(run_id)
        assert [(b.stage, b.state, b.requests) for b in stored] == [(1, "collected", 12), (2, "collected", 3)]

        # the same plan run live against the same canned answers gives the same records
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-live")
        plan = plan_for(MODEL, limit=3)
        live_store = Store(tmp_path / "live.db")
        live_info = asyncio.run(_live(plan, live_store, new_run(plan, live_store)))
        assert_same_records(Store(db).records(run_id), live_store.records(live_info.run_id))
    finally:
        srv.stop()
