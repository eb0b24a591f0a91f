"""Executing managed runs: the part the service's workers and ``probe schedule run-due`` share.

``RunExecutor.execute_run`` opens the run's providers (counting calls and errors per provider),
runs what is left of its plan through ``probe.runner.run.execute``, and, for a run started by a
schedule, compares it with the schedule's previous completed run and raises drift alerts.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from tenacity.wait import WaitBaseT

from probe.completion import ChatRequest, Completion, ConfigError, ProviderError
from probe.errors import UsageError
from probe.runner.engine import Engine, Progress
from probe.runner.run import close_providers, execute, make_plan, new_run, open_providers
from probe.runner.spec import RunSpec
from probe.service.alerts import (
    Alert,
    DriftSettings,
    WebhookPayload,
    deliver,
    drift_findings,
    set_webhook_status,
    store_alerts,
)
from probe.service.leases import adopt_orphans
from probe.service.scheduler import Clock, Fire, fire_of_run, get_schedule, previous_completed_run
from probe.spec import ModelSpecError
from probe.storage import RunInfo, Store
from probe.suite_io import SuiteError
from providers import Provider, RetryPolicy

log = logging.getLogger("probe.service")

SPEC_ERRORS: tuple[type[Exception], ...] = (UsageError, SuiteError, ConfigError, ModelSpecError, ValidationError)


class CallCounters:
    """Calls and failures per provider, for /metrics (one event loop writes them)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.errors: Counter[tuple[str, str]] = Counter()


class CountingProvider(Provider):
    """Delegates to a provider and counts each attempt and each failure by kind."""

    def __init__(self, inner: Provider, counters: CallCounters) -> None:
        super().__init__(inner.spec, inner.profile, inner.base_url, inner.redact)
        self.connection_key = inner.connection_key
        self.capabilities = inner.capabilities
        self._inner = inner
        self._counters = counters

    async def complete(self, req: ChatRequest) -> Completion:
        self._counters.calls[self.name] += 1
        try:
            return await self._inner.complete(req)
        except ProviderError as e:
            self._counters.errors[(self.name, e.failure.kind)] += 1
            raise

    async def _complete_once(self, req: ChatRequest) -> Completion:  # pragma: no cover - complete() delegates
        return await self._inner.complete(req)

    async def aclose(self) -> None:
        await self._inner.aclose()


def spec_of(info: RunInfo) -> RunSpec:
    """The RunSpec a run was created from (as stored in its manifest)."""
    return RunSpec.model_validate({k: v for k, v in info.spec.items() if k != "fingerprint"})


def create_run_for(store: Store, spec: RunSpec, run_id: str, clock: Clock) -> RunInfo:
    """Create run ``run_id`` for ``spec``; a spec that no longer resolves gives a failed run with the reason."""
    try:
        return new_run(make_plan(spec), store, run_id)
    except SPEC_ERRORS as e:
        info = RunInfo(run_id=run_id, status="failed", finished_at=clock(), models=[m.model for m in spec.models],
                       sources=list(spec.sources), spec=spec.model_dump(mode="json"), message=str(e))
        store.create_run(info)
        return info


def create_fire_run(store: Store, fire: Fire, clock: Clock) -> RunInfo:
    """The run row of a claimed fire: its schedule's run spec, with the response cache bypassed."""
    try:
        sched = get_schedule(store, fire.schedule_id)
    except KeyError:
        info = RunInfo(run_id=fire.run_id, status="failed", finished_at=clock(),
                       message=f"schedule {fire.schedule_id} was removed before its run was created")
        store.create_run(info)
        return info
    # a re-measurement must ask again: served from the response cache, a changed model would go unseen
    return create_run_for(store, sched.run.model_copy(update={"refresh": True}), fire.run_id, clock)


def ensure_run(store: Store, run_id: str, clock: Clock) -> RunInfo:
    """The run's row, created from its fire if a process stopped between claiming and creating it."""
    try:
        return store.get_run(run_id)
    except KeyError:
        fire = fire_of_run(store, run_id)
        if fire is None:
            raise
        return create_fire_run(store, fire, clock)


def adopt(store: Store, owner: str, clock: Clock, ttl: timedelta) -> list[RunInfo]:
    """Claim orphaned managed runs (their process stopped) and mark them queued to be resumed."""
    out = []
    for run_id in adopt_orphans(store, owner, clock(), ttl):
        info = ensure_run(store, run_id, clock)
        if info.status in ("running", "interrupted", "queued"):
            info = info.model_copy(update={"status": "queued", "message": "resuming after a restart"})
            store.update_run(info)
            out.append(info)
    return out


class RunExecutor:
    """Runs managed runs against real providers and raises drift alerts for scheduled ones."""

    def __init__(self, store: Store, *, clock: Clock, env: Callable[[], Mapping[str, str]],
                 policy: RetryPolicy | None = None, counters: CallCounters | None = None,
                 drift: DriftSettings | None = None, webhook_attempts: int = 4,
                 webhook_wait: WaitBaseT | None = None) -> None:
        self.store = store
        self.clock = clock
        self.env = env
        self.policy = policy
        self.counters = counters or CallCounters()
        self.drift = drift or DriftSettings()
        self.webhook_attempts = webhook_attempts
        self.webhook_wait = webhook_wait

    def _fail(self, info: RunInfo, message: str) -> RunInfo:
        info = info.model_copy(update={"status": "failed", "finished_at": self.clock(), "message": message})
        self.store.update_run(info)
        return info

    async def execute_run(self, run_id: str, on_start: Callable[[Engine, int], None] | None = None,
                          on_progress: Callable[[Progress], None] | None = None) -> RunInfo:
        """Run (or resume) ``run_id`` to its end. Cancellation propagates (the run is left interrupted)."""
        info = self.store.get_run(run_id)
        try:
            spec = spec_of(info)
            plan = await asyncio.to_thread(make_plan, spec)
            opened = open_providers(spec, self.env())
        except SPEC_ERRORS as e:
            return self._fail(info, str(e))
        providers: dict[str, Provider] = {m: CountingProvider(p, self.counters) for m, p in opened.items()}
        try:
            info = await execute(plan, self.store, info, providers, self.policy, on_progress=on_progress,
                                 on_start=on_start)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # execute() has recorded the run as failed
            log.warning("run %s failed: %s: %s", run_id, type(e).__name__, e, exc_info=True)
            return self.store.get_run(run_id)
        finally:
            await asyncio.shield(close_providers(providers))
        if info.status == "completed":
            await self.check_drift(info)
        return info

    async def check_drift(self, info: RunInfo) -> list[Alert]:
        """Compare a completed scheduled run with its schedule's previous completed run."""
        fire = fire_of_run(self.store, info.run_id)
        if fire is None:
            return []
        previous_id = previous_completed_run(self.store, info.run_id)
        if previous_id is None:
            return []
        previous = self.store.get_run(previous_id)

        def compare() -> list[Any]:
            return drift_findings(previous, self.store.records(previous_id), info,
                                  self.store.records(info.run_id), self.drift)

        findings = await asyncio.to_thread(compare)
        alerts = store_alerts(self.store, findings, schedule_id=fire.schedule_id, run_id=info.run_id,
                              previous_run_id=previous_id, now=self.clock())
        if not alerts:
            return alerts
        try:
            webhook = get_schedule(self.store, fire.schedule_id).webhook
        except KeyError:
            webhook = None
        if webhook:
            payload = WebhookPayload(schedule_id=fire.schedule_id, run_id=info.run_id,
                                     previous_run_id=previous_id, alerts=alerts)
            status = await deliver(webhook, payload, attempts=self.webhook_attempts, wait=self.webhook_wait)
            set_webhook_status(self.store, [a.alert_id for a in alerts], status)
            alerts = [a.model_copy(update={"webhook_status": status}) for a in alerts]
            if status != "delivered":
                log.warning("drift webhook for run %s: %s", info.run_id, status)
        return alerts
