"""Batch submissions in SQLite (tables of migration 0003): which batches a run sent, each request's
custom_id → response-cache key, and what came back for it. A new process can collect from this alone.

Batch states: ``submitting`` (written before the vendor is called; no vendor id yet), ``in_progress``
(the vendor has it), ``collected`` (results read), ``abandoned`` (the submission failed or was cut
off before the vendor confirmed it: its requests are pending again). A request's ``outcome`` is NULL
while its batch runs, then ``ok``, ``error:<kind>`` (with the CallFailure) or ``relearn`` (the model
rejected a parameter: resubmit without it). For a cache key the latest row decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from probe.completion import CallFailure
from probe.storage import Store, utcnow
from providers.batch_base import BatchInfo

BatchState = Literal["submitting", "in_progress", "collected", "abandoned"]
OPEN_STATES: tuple[BatchState, ...] = ("submitting", "in_progress")


class BatchRow(BaseModel):
    """One submitted (or attempted) batch."""

    model_config = ConfigDict(frozen=True)

    local_id: str = Field(description="probe's id of the batch (also sent as metadata where the vendor takes it).")
    run_id: str = Field(description="Run it belongs to.")
    model: str = Field(description="provider/model.")
    vendor: str = Field(description="openai or anthropic.")
    batch_id: str | None = Field(description="The vendor's batch id (None until confirmed).")
    stage: int = Field(description="Submission round within the run (1: first answers; 2: self-evaluation …).")
    state: BatchState = Field(description="probe's state of the batch.")
    vendor_status: str | None = Field(description="The vendor's last reported status.")
    requests: int = Field(description="Requests in the batch.")
    bytes: int = Field(description="Bytes of the submitted input.")
    created_at: datetime = Field(description="When it was written (UTC).")
    updated_at: datetime = Field(description="Last change (UTC).")
    data: dict[str, Any] = Field(description="Vendor counts, file ids, connection key, notes.")


class RequestRow(BaseModel):
    """One request of a batch."""

    model_config = ConfigDict(frozen=True)

    custom_id: str
    cache_key: str
    meta: dict[str, Any]


def _row(r: tuple[Any, ...]) -> BatchRow:
    return BatchRow(local_id=r[0], run_id=r[1], model=r[2], vendor=r[3], batch_id=r[4], stage=r[5], state=r[6],
                    vendor_status=r[7], requests=r[8], bytes=r[9], created_at=datetime.fromisoformat(r[10]),
                    updated_at=datetime.fromisoformat(r[11]), data=json.loads(r[12]))


_COLUMNS = ("local_id, run_id, model, vendor, batch_id, stage, state, vendor_status, requests, bytes, created_at, "
            "updated_at, data")


class BatchStore:
    """The batch tables of one Store (same connection, same lock, one transaction per write)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self.store.transaction() as c:
            return list(c.execute(sql, tuple(args)).fetchall())

    # -- runs -----------------------------------------------------------------------------
    def register_run(self, run_id: str, models: list[str]) -> list[str]:
        """Remember which models of a run go through batch engines (merged with earlier ones)."""
        now = utcnow().isoformat()
        with self.store.transaction() as c:
            row = c.execute("SELECT models FROM batch_runs WHERE run_id = ?", (run_id,)).fetchone()
            merged = list(dict.fromkeys([*(json.loads(row[0]) if row else []), *models]))
            c.execute("INSERT OR REPLACE INTO batch_runs VALUES (?, ?, ?)", (run_id, json.dumps(merged), now))
        return merged

    def run_models(self, run_id: str) -> list[str] | None:
        rows = self._query("SELECT models FROM batch_runs WHERE run_id = ?", (run_id,))
        return list(json.loads(rows[0][0])) if rows else None

    # -- batches --------------------------------------------------------------------------
    def next_stage(self, run_id: str) -> int:
        rows = self._query("SELECT MAX(stage) FROM batches WHERE run_id = ? AND state != 'abandoned'", (run_id,))
        return int(rows[0][0] or 0) + 1

    def add_batch(self, local_id: str, run_id: str, model: str, vendor: str, stage: int, size: int,
                  requests: list[RequestRow], data: dict[str, Any]) -> None:
        """Write the batch (state submitting) and its custom_id → key map, before the vendor is called."""
        now = utcnow().isoformat()
        with self.store.transaction() as c:
            c.execute(f"INSERT INTO batches ({_COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?, 'submitting', NULL, ?, ?, ?, ?, ?)",
                      (local_id, run_id, model, vendor, stage, len(requests), size, now, now, json.dumps(data)))
            c.executemany(
                "INSERT INTO batch_requests (local_id, custom_id, run_id, cache_key, meta) VALUES (?, ?, ?, ?, ?)",
                [(local_id, r.custom_id, run_id, r.cache_key, json.dumps(r.meta)) for r in requests])

    def _merge_data(self, local_id: str, extra: dict[str, Any]) -> str:
        rows = self._query("SELECT data FROM batches WHERE local_id = ?", (local_id,))
        data = json.loads(rows[0][0]) if rows else {}
        data.update(extra)
        return json.dumps(data)

    def confirm(self, local_id: str, info: BatchInfo) -> None:
        """The vendor accepted the batch: store its id and state."""
        self.update(local_id, info, batch_id=info.batch_id)

    def update(self, local_id: str, info: BatchInfo, *, batch_id: str | None = None,
               state: BatchState = "in_progress") -> None:
        data = self._merge_data(local_id, {"counts": info.counts, "vendor": info.data, "detail": info.detail})
        with self.store.transaction() as c:
            if batch_id is not None:
                c.execute("UPDATE batches SET batch_id = ? WHERE local_id = ?", (batch_id, local_id))
            c.execute("UPDATE batches SET state = ?, vendor_status = ?, updated_at = ?, data = ? WHERE local_id = ?",
                      (state, info.vendor_status, utcnow().isoformat(), data, local_id))

    def abandon(self, local_id: str, reason: str) -> None:
        data = self._merge_data(local_id, {"abandoned": reason})
        with self.store.transaction() as c:
            c.execute("UPDATE batches SET state = 'abandoned', updated_at = ?, data = ? WHERE local_id = ?",
                      (utcnow().isoformat(), data, local_id))

    def get(self, local_id: str) -> BatchRow:
        rows = self._query(f"SELECT {_COLUMNS} FROM batches WHERE local_id = ?", (local_id,))
        if not rows:
            raise KeyError(local_id)
        return _row(rows[0])

    def batches(self, run_id: str, states: Iterable[BatchState] | None = None) -> list[BatchRow]:
        sql = f"SELECT {_COLUMNS} FROM batches WHERE run_id = ?"
        args: list[Any] = [run_id]
        wanted = list(states) if states is not None else None
        if wanted is not None:
            sql += f" AND state IN ({', '.join('?' for _ in wanted)})"
            args += wanted
        return [_row(r) for r in self._query(sql + " ORDER BY stage, created_at, local_id", args)]

    # -- requests -------------------------------------------------------------------------
    def requests(self, local_id: str) -> dict[str, RequestRow]:
        """custom_id → (cache key, meta) of one batch."""
        rows = self._query("SELECT custom_id, cache_key, meta FROM batch_requests WHERE local_id = ?", (local_id,))
        return {r[0]: RequestRow(custom_id=r[0], cache_key=r[1], meta=json.loads(r[2])) for r in rows}

    def set_outcomes(self, local_id: str, outcomes: list[tuple[str, str, CallFailure | None]]) -> None:
        """(custom_id, outcome, failure) for lines read back."""
        if not outcomes:
            return
        with self.store.transaction() as c:
            c.executemany(
                "UPDATE batch_requests SET outcome = ?, failure = ? WHERE local_id = ? AND custom_id = ?",
                [(o, f.model_dump_json() if f is not None else None, local_id, cid) for cid, o, f in outcomes])

    def fail_unanswered(self, local_id: str, failure: CallFailure) -> int:
        """Requests of a finished batch with no result line get ``failure``; returns how many."""
        with self.store.transaction() as c:
            cur = c.execute("UPDATE batch_requests SET outcome = ?, failure = ? WHERE local_id = ? AND outcome IS NULL",
                            (f"error:{failure.kind}", failure.model_dump_json(), local_id))
            return int(cur.rowcount)

    def outcome_counts(self, local_id: str) -> dict[str, int]:
        rows = self._query("SELECT COALESCE(outcome, 'pending'), COUNT(*) FROM batch_requests WHERE local_id = ? "
                           "GROUP BY 1", (local_id,))
        return {r[0]: int(r[1]) for r in rows}

    def in_flight_keys(self, run_id: str) -> set[str]:
        """Cache keys of requests in batches the vendor still holds (not to be submitted again)."""
        rows = self._query(
            "SELECT r.cache_key FROM batch_requests r JOIN batches b ON b.local_id = r.local_id "
            "WHERE r.run_id = ? AND b.state IN ('submitting', 'in_progress') AND r.outcome IS NULL", (run_id,))
        return {r[0] for r in rows}

    def in_flight_among(self, run_id: str, keys: list[str]) -> set[str]:
        """Which of ``keys`` are in a batch the vendor still holds (checked in chunks: plans can be large)."""
        found: set[str] = set()
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            chunk = unique[i:i + 500]
            rows = self._query(
                "SELECT r.cache_key FROM batch_requests r JOIN batches b ON b.local_id = r.local_id "
                f"WHERE r.run_id = ? AND r.cache_key IN ({', '.join('?' for _ in chunk)}) "
                "AND b.state IN ('submitting', 'in_progress') AND r.outcome IS NULL", [run_id, *chunk])
            found.update(r[0] for r in rows)
        return found

    def failures(self, run_id: str) -> dict[str, CallFailure]:
        """cache key → failure, where the key's latest request failed and was not retired."""
        rows = self._query(
            "SELECT r.cache_key, r.outcome, r.failure, r.retired FROM batch_requests r "
            "JOIN batches b ON b.local_id = r.local_id WHERE r.run_id = ? AND b.state != 'abandoned' "
            "ORDER BY r.rowid", (run_id,))
        latest: dict[str, tuple[str | None, str | None, int]] = {}
        for key, outcome, failure, retired in rows:
            latest[key] = (outcome, failure, retired)
        return {key: CallFailure.model_validate_json(f) for key, (o, f, retired) in latest.items()
                if o is not None and o.startswith("error:") and f and not retired}

    def retire_failures(self, run_id: str) -> int:
        """Let failed requests be submitted again (``probe run --resume RUN_ID --batch``)."""
        with self.store.transaction() as c:
            cur = c.execute("UPDATE batch_requests SET retired = 1 WHERE run_id = ? AND outcome LIKE 'error:%' "
                            "AND retired = 0", (run_id,))
            return int(cur.rowcount)

    # -- what the model rejected (the batch twin of a live adapter's memory) ---------------------
    def learned(self, run_id: str, model: str) -> tuple[bool, tuple[str, ...]]:
        rows = self._query("SELECT logprobs_refused, dropped FROM batch_learned WHERE run_id = ? AND model = ?",
                           (run_id, model))
        if not rows:
            return False, ()
        return bool(rows[0][0]), tuple(json.loads(rows[0][1]))

    def learn(self, run_id: str, model: str, *, logprobs_refused: bool, dropped: Iterable[str]) -> None:
        old_refused, old_dropped = self.learned(run_id, model)
        merged = tuple(dict.fromkeys([*old_dropped, *dropped]))
        with self.store.transaction() as c:
            c.execute("INSERT OR REPLACE INTO batch_learned VALUES (?, ?, ?, ?)",
                      (run_id, model, int(old_refused or logprobs_refused), json.dumps(list(merged))))
