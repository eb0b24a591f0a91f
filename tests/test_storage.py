import sqlite3
from pathlib import Path

import pytest

from probe.completion import Choice, Completion, Usage
from probe.record import Record
from probe.storage import MIGRATIONS, RunInfo, Store


def rec(run_id: str, item: str, status: str = "ok", conf: float | None = 0.7) -> Record:
    return Record(run_id=run_id, model="sim/calibrated", provider="sim", suite="s", item_id=item,
                  variant="plain", source="token", status=status, confidence=conf if status == "ok" else None,
                  correct=True if status == "ok" else None)


def test_migrations_recorded_once_and_wal(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    Store(db).close()
    s = Store(db)
    assert s.applied_migrations() == [name for name, _ in MIGRATIONS]
    mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_records_replace_by_key_and_statuses(tmp_path: Path) -> None:
    s = Store(tmp_path / "p.db")
    s.create_run(RunInfo(run_id="r1"))
    s.put_records([rec("r1", "a", "error:rate_limit"), rec("r1", "b")])
    s.put_records([rec("r1", "a")])  # the resumed retry replaces the failure
    assert len(s.records("r1")) == 2
    assert s.status_counts("r1") == {"ok": 2}
    assert set(s.record_statuses("r1").values()) == {"ok"}


def test_find_run_by_prefix_and_errors(tmp_path: Path) -> None:
    s = Store(tmp_path / "p.db")
    s.create_run(RunInfo(run_id="r20260101-aaa"))
    s.create_run(RunInfo(run_id="r20260101-aab"))
    assert s.find_run("r20260101-aaa").run_id == "r20260101-aaa"
    with pytest.raises(KeyError, match="ambiguous"):
        s.find_run("r20260101-aa")
    with pytest.raises(KeyError, match="no run"):
        s.find_run("zzz")


def test_cache_roundtrip_keeps_missing_logprobs_missing(tmp_path: Path) -> None:
    s = Store(tmp_path / "p.db")
    c = Completion(choices=(Choice(text="A", logprob_state="unavailable", logprob_reason="provider_has_none"),),
                   usage=Usage(input_tokens=3, output_tokens=1))
    s.cache_put([("k1:x", c)])
    back = s.cache_get("k1:x")
    assert back == c and back.first.tokens is None
    assert s.cache_get("k1:y") is None
