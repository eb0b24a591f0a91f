"""``probe schedule run-due``: the scheduler's work done once, in this process (for system cron or a
Kubernetes CronJob instead of ``probe serve``). Same claims and leases as the service, so both may
run against one database without starting a fire twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta

from probe.runner.spec import RunSpec
from probe.service import leases
from probe.service.executor import RunExecutor, adopt, create_fire_run, spec_of
from probe.service.scheduler import Clock, claim_due, fire_now, system_clock
from probe.storage import RunInfo, Store
from providers import RetryPolicy

SimContext = Callable[[RunSpec], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def _no_sim(_: RunSpec) -> Iterator[None]:
    yield


async def _heartbeat(store: Store, owner: str, clock: Clock, ttl: timedelta) -> None:
    while True:
        await asyncio.sleep(max(0.05, min(ttl.total_seconds() / 4, 15.0)))
        leases.renew_all(store, owner, clock(), ttl)


async def run_due(store: Store, *, env: Callable[[], Mapping[str, str]], clock: Clock = system_clock,
                  only: str | None = None, now: bool = False, policy: RetryPolicy | None = None,
                  ttl: timedelta = timedelta(seconds=30), sim: SimContext = _no_sim,
                  resume_orphans: bool = True) -> list[RunInfo]:
    """Claim due schedules (or fire ``only`` at once with ``now``), run them one after another, check drift.

    Orphaned managed runs (their process stopped and their lease expired) are resumed first.
    """
    owner = leases.new_owner()
    executor = RunExecutor(store, clock=clock, env=env, policy=policy)
    beat = asyncio.create_task(_heartbeat(store, owner, clock, ttl))
    done: list[RunInfo] = []
    try:
        todo = [i.run_id for i in adopt(store, owner, clock, ttl)] if resume_orphans else []
        if now and only is not None:
            fires = [fire_now(store, only, clock(), owner, ttl)]
        else:
            fires = claim_due(store, clock(), owner, ttl, only=only)
        for fire in fires:
            info = create_fire_run(store, fire, clock)
            if info.status == "queued":
                todo.append(info.run_id)
            else:
                done.append(info)
        for run_id in todo:
            with sim(spec_of(store.get_run(run_id))):
                done.append(await executor.execute_run(run_id))
            leases.release(store, leases.run_lease(run_id), owner)
    finally:
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
        leases.release_all(store, owner)
    return done
