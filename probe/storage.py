"""SQLite storage: runs, records, the response cache. WAL mode, append-only named migrations.

Records are keyed by (run, model, suite, item, variant, source, sample): rewriting a key
replaces the row, so a resumed run fills gaps and overwrites failures without duplicates.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from probe.completion import Completion
from probe.record import Record, Sampling

DEFAULT_DB = Path("results") / "probe.db"

RunStatus = Literal["queued", "running", "completed", "failed", "cancelled", "interrupted"]

# Append-only: never edit or reorder an entry, add a new one.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_runs_records_cache",
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL,
            finished_at TEXT,
            info TEXT NOT NULL
        );
        CREATE TABLE records (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            model TEXT NOT NULL,
            suite TEXT NOT NULL,
            item_id TEXT NOT NULL,
            variant TEXT NOT NULL,
            source TEXT NOT NULL,
            sample INTEGER NOT NULL,
            status TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, model, suite, item_id, variant, source, sample)
        );
        CREATE INDEX records_status ON records(run_id, status);
        CREATE TABLE cache (
            key TEXT PRIMARY KEY,
            completion TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    ),
    (
        "0002_service_schedules_alerts_leases",
        """
        CREATE TABLE schedules (
            schedule_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            next_fire_at TEXT NOT NULL,
            data TEXT NOT NULL
        );
        CREATE TABLE schedule_fires (
            schedule_id TEXT NOT NULL,
            fire_at TEXT NOT NULL,
            run_id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL,
            claimed_at TEXT NOT NULL,
            PRIMARY KEY (schedule_id, fire_at)
        );
        CREATE TABLE managed_runs (
            run_id TEXT PRIMARY KEY,
            origin TEXT NOT NULL,
            schedule_id TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at TEXT NOT NULL
        );
        CREATE TABLE alerts (
            alert_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            schedule_id TEXT,
            run_id TEXT NOT NULL,
            data TEXT NOT NULL,
            webhook_status TEXT
        );
        CREATE INDEX alerts_created ON alerts(created_at)
        """,
    ),
    (
        "0003_batch_submissions",
        """
        CREATE TABLE batch_runs (
            run_id TEXT PRIMARY KEY,
            models TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE batches (
            local_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            model TEXT NOT NULL,
            vendor TEXT NOT NULL,
            batch_id TEXT UNIQUE,
            stage INTEGER NOT NULL,
            state TEXT NOT NULL,
            vendor_status TEXT,
            requests INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            data TEXT NOT NULL
        );
        CREATE INDEX batches_run ON batches(run_id, state);
        CREATE TABLE batch_requests (
            local_id TEXT NOT NULL REFERENCES batches(local_id),
            custom_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            cache_key TEXT NOT NULL,
            meta TEXT NOT NULL,
            outcome TEXT,
            failure TEXT,
            retired INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (local_id, custom_id)
        );
        CREATE INDEX batch_requests_key ON batch_requests(run_id, cache_key);
        CREATE TABLE batch_learned (
            run_id TEXT NOT NULL,
            model TEXT NOT NULL,
            logprobs_refused INTEGER NOT NULL,
            dropped TEXT NOT NULL,
            PRIMARY KEY (run_id, model)
        )
        """,
    ),
]


def utcnow() -> datetime:
    return datetime.now(UTC)


class SuiteRef(BaseModel):
    """Which suite (and exact content) a run used."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Suite name.")
    version: str = Field(description="Suite version.")
    fingerprint: str = Field(description="Versioned hash of the suite content.")
    questions: int = Field(default=0, description="Questions used from it (after --limit).")


class RunInfo(BaseModel):
    """A run's manifest and state."""

    run_id: str = Field(description="Run id.")
    status: RunStatus = Field(default="queued", description="Life-cycle state.")
    created_at: datetime = Field(default_factory=utcnow, description="When the run was created (UTC).")
    started_at: datetime | None = Field(default=None, description="When it started executing.")
    finished_at: datetime | None = Field(default=None, description="When it ended.")
    suites: list[SuiteRef] = Field(default_factory=list, description="Suites and fingerprints.")
    models: list[str] = Field(default_factory=list, description="provider/model strings.")
    sources: list[str] = Field(default_factory=list, description="Confidence sources measured.")
    variants: list[str] = Field(default_factory=list, description="Prompt variants asked.")
    sampling: Sampling = Field(default_factory=Sampling, description="Sampling parameters (consistency).")
    samples: int = Field(default=5, description="Samples per item for consistency.")
    limit: int | None = Field(default=None, description="Questions per suite, if limited.")
    probe_version: str = Field(default="", description="probe version that ran it.")
    model_ids: dict[str, str] = Field(default_factory=dict, description="model → id the API reported.")
    planned_records: int = Field(default=0, description="Records the plan holds.")
    spec: dict[str, object] = Field(default_factory=dict, description="The run spec as submitted.")
    message: str | None = Field(default=None, description="Why it failed or stopped, if it did.")


class Store:
    """One SQLite database. Safe to share between threads (one connection, one lock)."""

    def __init__(self, path: Path | str = DEFAULT_DB) -> None:
        self.path = Path(path)
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0,
                                     isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    # -- plumbing -------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as c:
            c.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            done = {row[0] for row in c.execute("SELECT name FROM migrations")}
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                for statement in sql.split(";"):
                    if statement.strip():
                        c.execute(statement)
                c.execute("INSERT INTO migrations VALUES (?, ?)", (name, utcnow().isoformat()))

    def applied_migrations(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT name FROM migrations ORDER BY rowid")]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs -----------------------------------------------------------------------------
    def create_run(self, info: RunInfo) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO runs (run_id, status, created_at, finished_at, info) VALUES (?, ?, ?, ?, ?)",
                (info.run_id, info.status, info.created_at.isoformat(),
                 info.finished_at.isoformat() if info.finished_at else None, info.model_dump_json()),
            )

    def update_run(self, info: RunInfo) -> None:
        with self.transaction() as c:
            cur = c.execute(
                "UPDATE runs SET status = ?, finished_at = ?, info = ? WHERE run_id = ?",
                (info.status, info.finished_at.isoformat() if info.finished_at else None,
                 info.model_dump_json(), info.run_id),
            )
            if cur.rowcount == 0:
                raise KeyError(info.run_id)

    def get_run(self, run_id: str) -> RunInfo:
        with self._lock:
            row = self._conn.execute("SELECT info FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(run_id)
        return RunInfo.model_validate_json(row[0])

    def find_run(self, prefix: str) -> RunInfo:
        """A run by id or unique id prefix; KeyError with a clear message otherwise."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT info FROM runs WHERE run_id = ? OR run_id LIKE ? ORDER BY created_at",
                (prefix, prefix.replace("%", "").replace("_", r"\_") + "%"),
            ).fetchall()
        exact = [r for r in rows if RunInfo.model_validate_json(r[0]).run_id == prefix]
        if exact:
            return RunInfo.model_validate_json(exact[0][0])
        if len(rows) == 1:
            return RunInfo.model_validate_json(rows[0][0])
        if not rows:
            raise KeyError(f"no run {prefix!r} in {self.path}")
        raise KeyError(f"run id prefix {prefix!r} is ambiguous ({len(rows)} runs) in {self.path}")

    def list_runs(self, status: str | None = None, limit: int | None = None, offset: int = 0) -> list[RunInfo]:
        sql = "SELECT info FROM runs"
        args: list[object] = []
        if status:
            sql += " WHERE status = ?"
            args.append(status)
        sql += " ORDER BY created_at DESC, run_id DESC"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            args += [limit, offset]
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [RunInfo.model_validate_json(r[0]) for r in rows]

    # -- records --------------------------------------------------------------------------
    def put_records(self, records: Iterable[Record]) -> int:
        """Insert or replace records (one transaction)."""
        rows = [
            (r.run_id, r.model, r.suite, r.item_id, r.variant, r.source, r.sample, r.status,
             r.model_dump_json())
            for r in records
        ]
        if not rows:
            return 0
        with self.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def write_batch(self, records: Iterable[Record], cache_items: Iterable[tuple[str, Completion]]) -> None:
        """Cache entries and records in one transaction (the runner's periodic flush)."""
        now = utcnow().isoformat()
        rows = [(r.run_id, r.model, r.suite, r.item_id, r.variant, r.source, r.sample, r.status,
                 r.model_dump_json()) for r in records]
        cached = [(k, c.model_dump_json(), now) for k, c in cache_items]
        if not rows and not cached:
            return
        with self.transaction() as c:
            if cached:
                c.executemany("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", cached)
            if rows:
                c.executemany("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def records(self, run_id: str, limit: int | None = None, offset: int = 0) -> list[Record]:
        sql = "SELECT data FROM records WHERE run_id = ? ORDER BY rowid"
        args: list[object] = [run_id]
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            args += [limit, offset]
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [Record.model_validate_json(r[0]) for r in rows]

    def record_statuses(self, run_id: str) -> dict[tuple[str, str, str, str, str, int], str]:
        """(model, suite, item, variant, source, sample) → status, for every record of a run."""
        sql = "SELECT model, suite, item_id, variant, source, sample, status FROM records WHERE run_id = ?"
        with self._lock:
            rows = self._conn.execute(sql, (run_id,)).fetchall()
        return {(r[0], r[1], r[2], r[3], r[4], int(r[5])): r[6] for r in rows}

    def status_counts(self, run_id: str) -> dict[str, int]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT status, COUNT(*) FROM records WHERE run_id = ? GROUP BY status", (run_id,)
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    # -- response cache -------------------------------------------------------------------
    def cache_get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT completion FROM cache WHERE key = ?", (key,)).fetchone()
        return Completion.model_validate_json(row[0]) if row else None

    def cache_put(self, items: Iterable[tuple[str, Completion]]) -> None:
        rows = [(k, c.model_dump_json(), utcnow().isoformat()) for k, c in items]
        if rows:
            with self.transaction() as c:
                c.executemany("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", rows)

    def cache_put_one(self, key: str, completion: Completion) -> None:
        """One entry, committed at once (autocommit): the runner's hot path."""
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)",
                               (key, completion.model_dump_json(), utcnow().isoformat()))

    def cache_size(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0])

