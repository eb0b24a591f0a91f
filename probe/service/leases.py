"""Leases and managed runs: which process owns which run, kept in SQLite.

A lease is a row (name, owner, expires_at). It is taken inside a BEGIN IMMEDIATE transaction, so
two processes on one database serialize on it: the second sees the first's live lease and backs
off. The owner renews its leases while it works; a lease that has expired belongs to a process
that died, and its work may be adopted by another.

Managed runs are the runs the service or the scheduler started (not those of a plain
``probe run``): only these are resumed on start-up.
"""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Literal

from probe.storage import Store

Origin = Literal["api", "schedule"]
UNFINISHED = ("queued", "running", "interrupted")


def iso(dt: datetime) -> str:
    """UTC ISO-8601 with microseconds: one fixed format, so text order is time order."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime: pass an aware (UTC) time")
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


def new_owner() -> str:
    """An owner id unique to this process instance."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def run_lease(run_id: str) -> str:
    return f"run:{run_id}"


def claim_in(c: sqlite3.Connection, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
    """Take or renew ``name`` for ``owner`` inside an open transaction; False if another owner holds it."""
    row = c.execute("SELECT owner, expires_at FROM leases WHERE name = ?", (name,)).fetchone()
    if row is not None and row[0] != owner and row[1] > iso(now):
        return False
    c.execute("INSERT OR REPLACE INTO leases (name, owner, expires_at) VALUES (?, ?, ?)",
              (name, owner, iso(now + ttl)))
    return True


def claim(store: Store, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
    with store.transaction() as c:
        return claim_in(c, name, owner, now, ttl)


def renew_all(store: Store, owner: str, now: datetime, ttl: timedelta) -> int:
    """Extend every lease ``owner`` holds; returns how many."""
    with store.transaction() as c:
        return c.execute("UPDATE leases SET expires_at = ? WHERE owner = ?", (iso(now + ttl), owner)).rowcount


def release(store: Store, name: str, owner: str) -> None:
    with store.transaction() as c:
        c.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))


def release_all(store: Store, owner: str) -> None:
    with store.transaction() as c:
        c.execute("DELETE FROM leases WHERE owner = ?", (owner,))


def holder(store: Store, name: str, now: datetime) -> str | None:
    """The owner of a live lease on ``name``, if any."""
    with store.transaction() as c:
        row = c.execute("SELECT owner, expires_at FROM leases WHERE name = ?", (name,)).fetchone()
    return row[0] if row is not None and row[1] > iso(now) else None


def register_in(c: sqlite3.Connection, run_id: str, origin: Origin, schedule_id: str | None,
                now: datetime) -> None:
    c.execute("INSERT OR IGNORE INTO managed_runs (run_id, origin, schedule_id, created_at) VALUES (?, ?, ?, ?)",
              (run_id, origin, schedule_id, iso(now)))


def register(store: Store, run_id: str, origin: Origin, owner: str, now: datetime, ttl: timedelta,
             schedule_id: str | None = None) -> None:
    """Mark a run as managed and take its lease, in one transaction."""
    with store.transaction() as c:
        register_in(c, run_id, origin, schedule_id, now)
        claim_in(c, run_lease(run_id), owner, now, ttl)


def schedule_of(store: Store, run_id: str) -> str | None:
    with store.transaction() as c:
        row = c.execute("SELECT schedule_id FROM managed_runs WHERE run_id = ?", (run_id,)).fetchone()
    return None if row is None else row[0]


def adopt_orphans(store: Store, owner: str, now: datetime, ttl: timedelta) -> list[str]:
    """Claim the unfinished managed runs whose lease is gone or expired (their process stopped).

    Runs whose row does not exist yet (a scheduler that stopped between claiming a fire and
    writing the run) are returned too; the caller creates them. Oldest first.
    """
    with store.transaction() as c:
        rows = c.execute(
            """SELECT m.run_id FROM managed_runs m
               LEFT JOIN runs r ON r.run_id = m.run_id
               LEFT JOIN leases l ON l.name = 'run:' || m.run_id
               WHERE (r.status IS NULL OR r.status IN (?, ?, ?))
                 AND (l.name IS NULL OR (l.owner != ? AND l.expires_at <= ?))
               ORDER BY m.created_at, m.run_id""",
            (*UNFINISHED, owner, iso(now)),
        ).fetchall()
        adopted = []
        for (run_id,) in rows:
            if claim_in(c, run_lease(run_id), owner, now, ttl):
                adopted.append(run_id)
    return adopted
