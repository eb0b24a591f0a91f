"""Persistent cron schedules: parsing (croniter), next fire times (zoneinfo), claiming due fires.

A due schedule is claimed in one BEGIN IMMEDIATE transaction that re-reads it, records a fire row
keyed by (schedule, fire time) with a fresh run id, registers that run as managed with a lease
for the claiming process, and moves the schedule's next fire time past *now*. A second process
on the same database waits for that transaction and then finds nothing due, so one fire never
starts two runs. Fires missed while nothing was running collapse into one (no pile-up).

The clock is a parameter everywhere (``Clock``): tests move time by hand.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from probe.runner.run import new_run_id
from probe.runner.spec import RunSpec
from probe.service.leases import claim_in, iso, register_in, run_lease
from probe.storage import Store

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def check_cron(expr: str) -> str:
    """A standard 5-field cron expression (minute hour day month weekday), checked by croniter."""
    expr = " ".join(expr.split())
    if len(expr.split(" ")) != 5 or not croniter.is_valid(expr):
        raise ValueError(f"not a valid 5-field cron expression: {expr!r} (e.g. '0 3 * * 1' = Mondays 03:00)")
    return expr


def check_timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as UTC or Europe/Berlin)") from None
    return name


def check_webhook(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"webhook must be an http(s) URL, not {url!r}")
    return url


def next_fire(cron: str, timezone: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that ``cron`` matches in ``timezone`` (returned in UTC)."""
    local = after.astimezone(ZoneInfo(timezone))
    nxt: datetime = croniter(cron, local).get_next(datetime)
    return nxt.astimezone(UTC)


class ScheduleSpec(BaseModel):
    """A schedule as submitted: when, what, and where to post drift alerts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cron: str = Field(description="5-field cron expression (minute hour day-of-month month day-of-week).",
                      examples=["0 3 * * 1"])
    timezone: str = Field(default="UTC", description="IANA time zone the cron expression is read in.")
    run: RunSpec = Field(description="The run to start at each fire (same fields as POST /v1/runs).")
    webhook: str | None = Field(default=None, description="URL that receives drift alerts as JSON (POST).")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return check_cron(value)

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        return check_timezone(value)

    @field_validator("webhook")
    @classmethod
    def _hook(cls, value: str | None) -> str | None:
        return None if value is None else check_webhook(value)


class Schedule(ScheduleSpec):
    """A stored schedule."""

    schedule_id: str = Field(description="Schedule id.")
    created_at: datetime = Field(description="When it was added (UTC).")
    next_fire_at: datetime = Field(description="Next time it fires (UTC).")
    last_fire_at: datetime | None = Field(default=None, description="The slot of its last fire (UTC).")
    last_run_id: str | None = Field(default=None, description="Run started by its last fire.")


class Fire(BaseModel):
    """One claimed fire of a schedule: the slot it stands for and the run it starts."""

    model_config = ConfigDict(frozen=True)

    schedule_id: str = Field(description="Schedule that fired.")
    fire_at: datetime = Field(description="The cron slot (UTC); for collapsed missed fires, the first one.")
    run_id: str = Field(description="Run id reserved for it.")
    owner: str = Field(description="Process that claimed it.")
    claimed_at: datetime = Field(description="When it was claimed (UTC).")


def new_schedule_id() -> str:
    return "s" + secrets.token_hex(5)


def add_schedule(store: Store, spec: ScheduleSpec, now: datetime) -> Schedule:
    sched = Schedule(**spec.model_dump(), schedule_id=new_schedule_id(), created_at=now,
                     next_fire_at=next_fire(spec.cron, spec.timezone, now))
    with store.transaction() as c:
        c.execute("INSERT INTO schedules (schedule_id, created_at, next_fire_at, data) VALUES (?, ?, ?, ?)",
                  (sched.schedule_id, iso(now), iso(sched.next_fire_at), sched.model_dump_json()))
    return sched


def list_schedules(store: Store) -> list[Schedule]:
    with store.transaction() as c:
        rows = c.execute("SELECT data FROM schedules ORDER BY created_at, schedule_id").fetchall()
    return [Schedule.model_validate_json(r[0]) for r in rows]


def get_schedule(store: Store, schedule_id: str) -> Schedule:
    with store.transaction() as c:
        row = c.execute("SELECT data FROM schedules WHERE schedule_id = ?", (schedule_id,)).fetchone()
    if row is None:
        raise KeyError(schedule_id)
    return Schedule.model_validate_json(row[0])


def remove_schedule(store: Store, schedule_id: str) -> bool:
    """Delete a schedule (its past fires, runs and alerts stay). False if there was none."""
    with store.transaction() as c:
        return c.execute("DELETE FROM schedules WHERE schedule_id = ?", (schedule_id,)).rowcount > 0


def claim_due(store: Store, now: datetime, owner: str, lease_ttl: timedelta,
              only: str | None = None) -> list[Fire]:
    """Claim every schedule due at ``now`` (or just ``only``, if given); see the module doc."""
    fires: list[Fire] = []
    with store.transaction() as c:
        sql = "SELECT data FROM schedules WHERE next_fire_at <= ?"
        args: list[str] = [iso(now)]
        if only is not None:
            sql += " AND schedule_id = ?"
            args.append(only)
        for (data,) in c.execute(sql + " ORDER BY next_fire_at, schedule_id", args).fetchall():
            sched = Schedule.model_validate_json(data)
            fire = Fire(schedule_id=sched.schedule_id, fire_at=sched.next_fire_at, run_id=new_run_id(),
                        owner=owner, claimed_at=now)
            c.execute("INSERT INTO schedule_fires (schedule_id, fire_at, run_id, owner, claimed_at) "
                      "VALUES (?, ?, ?, ?, ?)",
                      (fire.schedule_id, iso(fire.fire_at), fire.run_id, owner, iso(now)))
            register_in(c, fire.run_id, "schedule", sched.schedule_id, now)
            claim_in(c, run_lease(fire.run_id), owner, now, lease_ttl)
            nxt = next_fire(sched.cron, sched.timezone, max(now, sched.next_fire_at))
            updated = sched.model_copy(update={"next_fire_at": nxt, "last_fire_at": fire.fire_at,
                                               "last_run_id": fire.run_id})
            c.execute("UPDATE schedules SET next_fire_at = ?, data = ? WHERE schedule_id = ?",
                      (iso(nxt), updated.model_dump_json(), sched.schedule_id))
            fires.append(fire)
    return fires


def fire_now(store: Store, schedule_id: str, now: datetime, owner: str, lease_ttl: timedelta) -> Fire:
    """Fire a schedule at once (out of turn); its next regular fire time is kept."""
    sched = get_schedule(store, schedule_id)
    fire = Fire(schedule_id=schedule_id, fire_at=now, run_id=new_run_id(), owner=owner, claimed_at=now)
    with store.transaction() as c:
        c.execute("INSERT INTO schedule_fires (schedule_id, fire_at, run_id, owner, claimed_at) "
                  "VALUES (?, ?, ?, ?, ?)", (schedule_id, iso(now), fire.run_id, owner, iso(now)))
        register_in(c, fire.run_id, "schedule", schedule_id, now)
        claim_in(c, run_lease(fire.run_id), owner, now, lease_ttl)
        updated = sched.model_copy(update={"last_fire_at": now, "last_run_id": fire.run_id})
        c.execute("UPDATE schedules SET data = ? WHERE schedule_id = ?", (updated.model_dump_json(), schedule_id))
    return fire


def fires_of(store: Store, schedule_id: str) -> list[Fire]:
    with store.transaction() as c:
        rows = c.execute("SELECT schedule_id, fire_at, run_id, owner, claimed_at FROM schedule_fires "
                         "WHERE schedule_id = ? ORDER BY fire_at", (schedule_id,)).fetchall()
    return [Fire(schedule_id=r[0], fire_at=datetime.fromisoformat(r[1]), run_id=r[2], owner=r[3],
                 claimed_at=datetime.fromisoformat(r[4])) for r in rows]


def fire_of_run(store: Store, run_id: str) -> Fire | None:
    with store.transaction() as c:
        r = c.execute("SELECT schedule_id, fire_at, run_id, owner, claimed_at FROM schedule_fires "
                      "WHERE run_id = ?", (run_id,)).fetchone()
    if r is None:
        return None
    return Fire(schedule_id=r[0], fire_at=datetime.fromisoformat(r[1]), run_id=r[2], owner=r[3],
                claimed_at=datetime.fromisoformat(r[4]))


def previous_completed_run(store: Store, run_id: str) -> str | None:
    """The latest completed run of the same schedule fired before ``run_id``'s fire."""
    with store.transaction() as c:
        row = c.execute(
            """SELECT f.run_id FROM schedule_fires f
               JOIN schedule_fires me ON me.schedule_id = f.schedule_id AND me.run_id = ?
               JOIN runs r ON r.run_id = f.run_id
               WHERE f.fire_at < me.fire_at AND r.status = 'completed'
               ORDER BY f.fire_at DESC LIMIT 1""",
            (run_id,),
        ).fetchone()
    return None if row is None else row[0]
