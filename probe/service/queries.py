"""Read-only questions the service asks the database beyond the Store's own methods."""

from __future__ import annotations

from probe.storage import Store


def runs_by_status(store: Store) -> dict[str, int]:
    with store.transaction() as c:
        rows = c.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
    return {r[0]: int(r[1]) for r in rows}


def record_count(store: Store, run_id: str) -> int:
    with store.transaction() as c:
        return int(c.execute("SELECT COUNT(*) FROM records WHERE run_id = ?", (run_id,)).fetchone()[0])


def origin_of(store: Store, run_id: str) -> tuple[str, str | None] | None:
    """(origin, schedule id) of a managed run; None for a run the service did not start."""
    with store.transaction() as c:
        row = c.execute("SELECT origin, schedule_id FROM managed_runs WHERE run_id = ?", (run_id,)).fetchone()
    return None if row is None else (row[0], row[1])


def schedule_count(store: Store) -> int:
    with store.transaction() as c:
        return int(c.execute("SELECT COUNT(*) FROM schedules").fetchone()[0])


def alert_count(store: Store) -> int:
    with store.transaction() as c:
        return int(c.execute("SELECT COUNT(*) FROM alerts").fetchone()[0])
