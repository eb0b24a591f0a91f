"""The service's moving parts inside one event loop: run workers, the scheduler, lease heartbeats.

Runs wait in a queue served by ``workers`` asyncio tasks, each calling the runner's ``execute``.
On start-up the service adopts the managed runs a previous process left unfinished (their lease
is gone or expired) and resumes them. ``stop`` stops taking work, gives running runs
``shutdown_grace_s`` to finish, then interrupts them (what finished is stored; a later start
resumes the rest) and releases this process's leases.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from tenacity.wait import WaitBaseT

from probe.analysis import Binning, build_report
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from probe.completion import ConfigError
from probe.errors import UsageError
from probe.runner.engine import Engine
from probe.runner.run import Plan, make_plan, new_run
from probe.runner.spec import RunSpec
from probe.service import leases
from probe.service.alerts import DriftSettings
from probe.service.config import ServiceConfig
from probe.service.executor import CallCounters, RunExecutor, adopt, create_fire_run, spec_of
from probe.service.scheduler import Clock, Fire, claim_due, fire_now, system_clock
from probe.spec import ModelSpecError
from probe.storage import RunInfo, Store
from probe.suite_io import SuiteError, available_suites
from providers import RetryPolicy, create_provider

log = logging.getLogger("probe.service")

FINAL = ("completed", "failed", "cancelled")
SIM_ENV = "SIM_BASE_URL"
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


class SpecRejected(Exception):
    """A run spec that cannot run here; ``loc`` names the field (as in a 422 body)."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


class Conflict(Exception):
    """The request is valid but the resource's state forbids it (409)."""


@dataclass
class ActiveRun:
    """A run this process is executing."""

    task: asyncio.Task[RunInfo]
    engine: Engine | None = None
    units_total: int = 0
    cancel_requested: bool = False


class ResultCache:
    """Computed bodies (metrics JSON, HTML reports) of finished runs, computed once per key."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[tuple[object, ...], bytes] = OrderedDict()
        self._locks: dict[tuple[object, ...], asyncio.Lock] = {}

    async def get(self, key: tuple[object, ...], compute: Callable[[], Awaitable[bytes]]) -> bytes:
        hit = self._data.get(key)
        if hit is not None:
            self._data.move_to_end(key)
            return hit
        lock = self._locks.setdefault(key, asyncio.Lock())
        try:
            async with lock:  # one computation per key, however many ask at once
                hit = self._data.get(key)
                if hit is None:
                    hit = await compute()
                    if self.size:
                        self._data[key] = hit
                        while len(self._data) > self.size:
                            self._data.popitem(last=False)
        finally:
            if not lock.locked():
                self._locks.pop(key, None)
        return hit


@dataclass
class _Loops:
    workers: list[asyncio.Task[None]] = field(default_factory=list)
    background: list[asyncio.Task[None]] = field(default_factory=list)
    warming: set[asyncio.Task[None]] = field(default_factory=set)


class Runtime:
    """Workers, scheduler and leases of one service process."""

    def __init__(self, config: ServiceConfig, *, store: Store | None = None, clock: Clock = system_clock,
                 env: Mapping[str, str] | None = None, policy: RetryPolicy | None = None,
                 drift: DriftSettings | None = None, webhook_wait: WaitBaseT | None = None) -> None:
        self.config = config
        self.store = store or Store(config.db)
        self.clock = clock
        self.owner = leases.new_owner()
        self.ttl = timedelta(seconds=config.lease_ttl_s)
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.counters = CallCounters()
        self.executor = RunExecutor(self.store, clock=clock, env=lambda: self.env,
                                    policy=policy,
                                    counters=self.counters, drift=drift,
                                    webhook_attempts=config.webhook_attempts, webhook_wait=webhook_wait)
        self.results = ResultCache(config.report_cache)
        self.active: dict[str, ActiveRun] = {}
        self.accepting = False
        self._queue: asyncio.Queue[str] | None = None
        self._loops = _Loops()
        self._sim = contextlib.ExitStack()

    # -- life cycle -----------------------------------------------------------------------
    @property
    def queue(self) -> asyncio.Queue[str]:
        if self._queue is None:
            raise RuntimeError("the runtime is not started")
        return self._queue

    def queue_depth(self) -> int:
        return 0 if self._queue is None else self._queue.qsize()

    async def start(self, *, scheduler: bool = True) -> None:
        self._queue = asyncio.Queue()
        self.accepting = True
        for info in adopt(self.store, self.owner, self.clock, self.ttl):
            log.info("resuming run %s", info.run_id)
            self._enqueue(info)
        self._loops.workers = [asyncio.create_task(self._worker(i)) for i in range(self.config.workers)]
        self._loops.background.append(asyncio.create_task(self._heartbeat_loop()))
        if scheduler:
            self._loops.background.append(asyncio.create_task(self._scheduler_loop()))

    async def stop(self) -> None:
        """Graceful: no new work; running runs get the grace period, then are interrupted."""
        self.accepting = False
        for t in self._loops.background:
            t.cancel()
        await asyncio.gather(*self._loops.background, return_exceptions=True)
        running = [a.task for a in self.active.values()]
        if running and self.config.shutdown_grace_s > 0:
            await asyncio.wait(running, timeout=self.config.shutdown_grace_s)
        interrupted = [run_id for run_id, a in self.active.items() if not a.task.done()]
        for a in list(self.active.values()):
            a.task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if interrupted:
            log.info("stopped; interrupted run(s) %s will resume on the next start", ", ".join(interrupted))
        for t in [*self._loops.workers, *self._loops.warming]:
            t.cancel()
        await asyncio.gather(*self._loops.workers, *self._loops.warming, return_exceptions=True)
        leases.release_all(self.store, self.owner)
        self._sim.close()

    # -- results ------------------------------------------------------------------------------
    async def cached(self, info: RunInfo, key: tuple[object, ...], work: Callable[[], bytes]) -> bytes:
        """``work()`` (run in a thread), kept per finished run state and ``key``; recomputed while a run is
        unfinished (its records still change)."""
        async def compute() -> bytes:
            return await asyncio.to_thread(work)

        if info.status not in FINAL:
            return await compute()
        return await self.results.get((info.run_id, info.status, info.finished_at, *key), compute)

    async def metrics_body(self, info: RunInfo, *, bins: int = 10, binning: Binning = "width",
                           resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> bytes:
        """The run's report as the JSON bytes `probe report --format json` prints (compact)."""
        def work() -> bytes:
            rep = build_report(info, self.store.records(info.run_id), bins=bins, binning=binning,
                               resamples=resamples, seed=seed)
            return json.dumps(rep.model_dump(mode="json"), ensure_ascii=False, allow_nan=False).encode()

        return await self.cached(info, ("metrics", bins, binning, resamples, seed), work)

    async def _warm(self, run_id: str) -> None:
        """Compute a finished run's default metrics now, so the first reader does not wait."""
        try:
            await self.metrics_body(self.store.get_run(run_id))
        except Exception:
            log.exception("computing the metrics of run %s", run_id)

    # -- submitting -------------------------------------------------------------------------
    async def prepare(self, spec: RunSpec) -> Plan:
        """Check that ``spec`` can run here (suites, variants, providers and keys); SpecRejected if not."""
        if not self.config.allow_suite_paths:
            known = available_suites()
            for i, name in enumerate(spec.suites):
                if name not in known:
                    raise SpecRejected(("body", "suites", i), f"unknown suite {name!r} (known: "
                                                             f"{', '.join(sorted(known)) or 'none'})")
        try:
            plan = make_plan(spec)
        except (UsageError, SuiteError) as e:
            raise SpecRejected(("body", "suites" if isinstance(e, SuiteError) else "variants"), str(e)) from None
        env = self._env_for(spec)
        for i, cfg in enumerate(spec.models):
            try:
                provider = create_provider(cfg.spec(), env)
            except (ConfigError, ModelSpecError) as e:
                raise SpecRejected(("body", "models", i), str(e)) from None
            await provider.aclose()
        return plan

    def submit(self, plan: Plan) -> RunInfo:
        if not self.accepting:
            raise Conflict("the service is shutting down")
        info = new_run(plan, self.store)
        leases.register(self.store, info.run_id, "api", self.owner, self.clock(), self.ttl)
        self._enqueue(info)
        return info

    def _env_for(self, spec: RunSpec) -> dict[str, str]:
        """The environment providers see; starts the simulator when sim/ models need one."""
        needs_sim = any(m.model.startswith("sim/") and not m.base_url for m in spec.models)
        if needs_sim and SIM_ENV not in self.env and self.config.auto_sim:
            from probe.sim import running_sim

            extra = [s for s in spec.suites if Path(s).exists()]
            # the simulator's uvicorn config sets the process-wide uvicorn loggers' levels: keep ours
            levels = {name: logging.getLogger(name).level for name in UVICORN_LOGGERS}
            self.env[SIM_ENV] = self._sim.enter_context(running_sim(suites=extra))
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
            log.info("started the simulator at %s", self.env[SIM_ENV])
        return self.env

    def _enqueue(self, info: RunInfo) -> None:
        with contextlib.suppress(Exception):
            self._env_for(spec_of(info))
        self.queue.put_nowait(info.run_id)

    # -- cancelling ---------------------------------------------------------------------------
    async def cancel(self, run_id: str) -> RunInfo:
        """Cancel a queued or running run (KeyError if unknown, Conflict if it cannot be)."""
        info = self.store.get_run(run_id)
        if info.status in FINAL:
            raise Conflict(f"run {run_id} is already {info.status}")
        active = self.active.get(run_id)
        if active is not None:
            active.cancel_requested = True
            active.task.cancel()
            await asyncio.wait([active.task], timeout=30)
            return self._mark_cancelled(run_id)
        owner = leases.holder(self.store, leases.run_lease(run_id), self.clock())
        if owner is not None and owner != self.owner:
            raise Conflict(f"run {run_id} belongs to another service process ({owner})")
        if owner is None and info.status == "running":
            raise Conflict(f"run {run_id} is being executed by another process (a `probe run`?)")
        return self._mark_cancelled(run_id)

    def _mark_cancelled(self, run_id: str) -> RunInfo:
        info = self.store.get_run(run_id)
        if info.status in FINAL:
            return info
        info = info.model_copy(update={"status": "cancelled", "finished_at": self.clock(),
                                       "message": "cancelled on request"})
        self.store.update_run(info)
        leases.release(self.store, leases.run_lease(run_id), self.owner)
        return info

    # -- workers ------------------------------------------------------------------------------
    async def _worker(self, index: int) -> None:
        while True:
            run_id = await self.queue.get()
            if not self.accepting:
                continue  # stays queued in the database; the next start resumes it
            try:
                await self._run_one(run_id)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
            except Exception:
                log.exception("worker %d: run %s", index, run_id)

    async def _run_one(self, run_id: str) -> None:
        info = self.store.get_run(run_id)
        if info.status in FINAL:
            return
        task = asyncio.create_task(self.executor.execute_run(run_id, on_start=lambda e, n: self._started(
            run_id, e, n)))
        active = ActiveRun(task=task)
        self.active[run_id] = active
        try:
            info = await task
        except asyncio.CancelledError:
            if active.cancel_requested:
                self._mark_cancelled(run_id)
            else:
                raise
        else:
            if info.status in FINAL and self.config.warm_metrics:
                warm = asyncio.create_task(self._warm(run_id))
                self._loops.warming.add(warm)
                warm.add_done_callback(self._loops.warming.discard)
        finally:
            self.active.pop(run_id, None)
            leases.release(self.store, leases.run_lease(run_id), self.owner)

    def _started(self, run_id: str, engine: Engine, units: int) -> None:
        active = self.active.get(run_id)
        if active is not None:
            active.engine = engine
            active.units_total = units

    # -- scheduler and leases -----------------------------------------------------------------
    async def tick(self) -> list[Fire]:
        """Start the runs of due schedules and adopt orphaned runs; returns the fires claimed."""
        if not self.accepting:
            return []
        now = self.clock()
        leases.renew_all(self.store, self.owner, now, self.ttl)
        fires = claim_due(self.store, now, self.owner, self.ttl)
        for fire in fires:
            self._start_fire(fire)
        for info in adopt(self.store, self.owner, self.clock, self.ttl):
            log.info("adopting orphaned run %s", info.run_id)
            self._enqueue(info)
        return fires

    def fire_now(self, schedule_id: str) -> Fire:
        """Start a schedule's run at once (KeyError if no such schedule)."""
        if not self.accepting:
            raise Conflict("the service is shutting down")
        fire = fire_now(self.store, schedule_id, self.clock(), self.owner, self.ttl)
        self._start_fire(fire)
        return fire

    def _start_fire(self, fire: Fire) -> None:
        info = create_fire_run(self.store, fire, self.clock)
        if info.status == "queued":
            self._enqueue(info)
        else:
            log.warning("schedule %s: run %s %s: %s", fire.schedule_id, info.run_id, info.status, info.message)

    async def _scheduler_loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("scheduler tick")
            await asyncio.sleep(self.config.tick_s)

    async def _heartbeat_loop(self) -> None:
        interval = max(0.05, min(self.config.lease_ttl_s / 4, 15.0))
        while True:
            await asyncio.sleep(interval)
            try:
                leases.renew_all(self.store, self.owner, self.clock(), self.ttl)
            except Exception:
                log.exception("lease heartbeat")
