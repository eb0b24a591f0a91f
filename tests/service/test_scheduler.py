"""Schedules: cron parsing, time zones, one fire per period, the missed-run rule, two-process claims."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from probe.runner.spec import RunSpec
from probe.service import leases
from probe.service.scheduler import (
    ScheduleSpec,
    add_schedule,
    claim_due,
    fires_of,
    get_schedule,
    list_schedules,
    next_fire,
    remove_schedule,
)
from probe.storage import Store

TTL = timedelta(seconds=30)
RUN = RunSpec.model_validate({"suites": ["demo"], "models": ["sim/calibrated"], "limit": 2})


def at(hour: int, minute: int = 0, day: int = 6) -> datetime:
    return datetime(2025, 1, day, hour, minute, tzinfo=UTC)


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_next_fire_reads_cron_in_the_schedule_time_zone() -> None:
    # Mondays 03:00 in Berlin: 02:00 UTC in winter (CET), 01:00 UTC in summer (CEST)
    assert next_fire("0 3 * * 1", "Europe/Berlin", datetime(2025, 1, 1, tzinfo=UTC)) == datetime(
        2025, 1, 6, 2, 0, tzinfo=UTC)
    assert next_fire("0 3 * * 1", "Europe/Berlin", datetime(2025, 7, 1, tzinfo=UTC)) == datetime(
        2025, 7, 7, 1, 0, tzinfo=UTC)
    # strictly after: a time on a slot gives the next slot
    assert next_fire("0 * * * *", "UTC", at(11)) == at(12)


def test_next_fire_across_a_dst_gap() -> None:
    # 02:30 does not exist in Berlin on 2025-03-30; the fire still happens once that day
    first = next_fire("30 2 * * *", "Europe/Berlin", datetime(2025, 3, 29, 12, tzinfo=UTC))
    second = next_fire("30 2 * * *", "Europe/Berlin", first)
    assert first.date().isoformat() == "2025-03-30"
    assert second.date().isoformat() == "2025-03-31"


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("cron", "61 * * * *", "cron"),
    ("cron", "* * * *", "5-field"),
    ("cron", "every monday", "cron"),
    ("timezone", "Mars/Olympus", "time zone"),
    ("webhook", "ftp://example.invalid/x", "http"),
])
def test_invalid_schedule_fields_are_named(field: str, value: str, needle: str) -> None:
    body = {"cron": "0 3 * * 1", "timezone": "UTC", "run": RUN.model_dump(mode="json"), field: value}
    with pytest.raises(ValidationError) as e:
        ScheduleSpec.model_validate(body)
    err = e.value.errors()[0]
    assert err["loc"] == (field,)
    assert needle in str(err["msg"])


def test_crud(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    s = add_schedule(store, ScheduleSpec(cron="0 3 * * 1", run=RUN), at(10))
    assert s.next_fire_at == datetime(2025, 1, 13, 3, tzinfo=UTC)  # 2025-01-06 was a Monday, 03:00 passed
    assert [x.schedule_id for x in list_schedules(store)] == [s.schedule_id]
    assert get_schedule(store, s.schedule_id).run == RUN
    assert remove_schedule(store, s.schedule_id)
    assert not remove_schedule(store, s.schedule_id)
    with pytest.raises(KeyError):
        get_schedule(store, s.schedule_id)


def test_fires_once_per_period(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    clock = FakeClock(at(10, 30))
    s = add_schedule(store, ScheduleSpec(cron="0 * * * *", run=RUN), clock())
    claimed = []
    # look every 10 minutes for five hours: each hourly slot fires exactly once, on time
    while clock.now < at(15, 30):
        claimed += claim_due(store, clock.now, "me", TTL)
        clock.now += timedelta(minutes=10)
    assert [f.fire_at for f in claimed] == [at(h) for h in (11, 12, 13, 14, 15)]
    assert [f.claimed_at for f in claimed] == [at(h) for h in (11, 12, 13, 14, 15)]
    assert len({f.run_id for f in claimed}) == 5
    assert [f.run_id for f in fires_of(store, s.schedule_id)] == [f.run_id for f in claimed]
    after = get_schedule(store, s.schedule_id)
    assert after.next_fire_at == at(16)
    assert after.last_run_id == claimed[-1].run_id


def test_missed_fires_collapse_into_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    s = add_schedule(store, ScheduleSpec(cron="0 * * * *", run=RUN), at(10, 30))
    # the service was down from 10:30 to 15:20: slots 11..15 were missed
    fires = claim_due(store, at(15, 20), "me", TTL)
    assert len(fires) == 1
    assert fires[0].fire_at == at(11)  # the first missed slot
    assert get_schedule(store, s.schedule_id).next_fire_at == at(16)  # no pile-up: next is in the future
    assert claim_due(store, at(15, 21), "me", TTL) == []
    assert len(claim_due(store, at(16), "me", TTL)) == 1


def test_a_claimed_fire_registers_a_leased_managed_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    s = add_schedule(store, ScheduleSpec(cron="0 * * * *", run=RUN), at(10, 30))
    (fire,) = claim_due(store, at(11), "me", TTL)
    assert leases.schedule_of(store, fire.run_id) == s.schedule_id
    assert leases.holder(store, leases.run_lease(fire.run_id), at(11)) == "me"
    # another process cannot adopt it while the lease is live, and can once it expired
    assert leases.adopt_orphans(store, "other", at(11, 0) + TTL / 2, TTL) == []
    assert leases.adopt_orphans(store, "other", at(11, 1) + TTL, TTL) == [fire.run_id]


def _claim_worker(db: str, owner: str, times: list[str], start: multiprocessing.synchronize.Barrier,
                  out: multiprocessing.Queue[tuple[str, list[tuple[str, str]]]]) -> None:
    store = Store(db)
    got: list[tuple[str, str]] = []
    start.wait()
    for t in times:
        for f in claim_due(store, datetime.fromisoformat(t), owner, TTL):
            got.append((f.fire_at.isoformat(), f.run_id))
    out.put((owner, got))


def test_two_processes_never_claim_the_same_fire(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    store = Store(db)
    schedules = [add_schedule(store, ScheduleSpec(cron=f"{m} * * * *", run=RUN), at(10, 30)) for m in (0, 20, 40)]
    # both processes walk the same clock minute by minute over three hours, racing for every fire
    times = [(at(10, 30) + timedelta(minutes=i)).isoformat() for i in range(180)]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    out: multiprocessing.Queue[tuple[str, list[tuple[str, str]]]] = ctx.Queue()
    procs = [ctx.Process(target=_claim_worker, args=(str(db), owner, times, barrier, out)) for owner in ("A", "B")]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    claimed = results["A"] + results["B"]
    expected = 3 * 3  # three schedules, each fires once an hour over 10:30..13:29
    assert len(claimed) == expected
    assert len({run_id for _, run_id in claimed}) == expected
    assert sorted(f.fire_at.isoformat() for s in schedules for f in fires_of(store, s.schedule_id)) == sorted(
        t for t, _ in claimed)
