"""Batch mode of a run: collect ended batches → engine pass (collect-only) → submit what is pending.

The request plan, the cache keys and the records all come from the runner's Engine: in collect-only
mode it lists every cache miss instead of sending it (``engine.pending``) and writes the records of
every unit whose calls are all answered. One ``advance`` therefore

1. polls the run's open batches; an ended one is downloaded, each line joined on its custom_id to
   the stored cache key, read with the SAME converters as a live response and put in the response
   cache (failed lines are kept with their CallFailure: ``known_failure`` hands them to the engine,
   which records them as ``error:<kind>``);
2. re-runs the engine over the units still missing records: answered units are written from the
   cache with zero live calls, and the next stage's calls (ptrue's self-evaluation needs the answer
   first) come out as pending;
3. submits the pending calls not already in flight, per model, split within the vendor's limits,
   the custom_id → key map written to SQLite before the vendor is called.

When nothing is pending and no batch is open, the run is complete.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from probe.batch.split import custom_id_for, starts_new_batch, too_large
from probe.batch.store import OPEN_STATES, BatchRow, BatchStore, RequestRow
from probe.completion import CallFailure, Completion, ProviderError
from probe.errors import UsageError
from probe.runner.engine import Engine, PendingCall
from probe.runner.run import Plan, remaining_units
from probe.runner.spec import RunSpec
from probe.spec import ModelSpec
from probe.storage import RunInfo, Store
from providers import Provider, RetryPolicy
from providers.batch_base import (
    BatchInfo,
    BatchLimits,
    BatchLine,
    BatchVendor,
    LineOutcome,
    has_batch_engine,
    open_batch_vendor,
)
from providers.hosts import profile_for
from providers.normalize import MalformedPayload

FLUSH_LINES = 1000
UNIT_SLICE = 2000  # units per engine pass: bounds the pending calls held at once
_MISSING = {
    "expired": "the batch expired before this request ran (no result line)",
    "canceled": "the batch was cancelled before this request ran (no result line)",
    "bad_request": "the batch failed validation",
    "malformed": "the ended batch returned no result line for this request",
}


class BatchSummary(BaseModel):
    """A batch as the CLI shows it."""

    local_id: str = Field(description="probe's id of the batch.")
    batch_id: str | None = Field(description="The vendor's id.")
    model: str = Field(description="provider/model.")
    stage: int = Field(description="Submission round.")
    state: str = Field(description="probe's state: submitting, in_progress, collected, abandoned.")
    vendor_status: str | None = Field(description="The vendor's status word.")
    requests: int = Field(description="Requests in it.")
    counts: dict[str, int] = Field(default_factory=dict, description="The vendor's request counts.")
    outcomes: dict[str, int] = Field(default_factory=dict, description="Lines read back, by outcome.")

    @classmethod
    def of(cls, row: BatchRow, outcomes: dict[str, int] | None = None) -> BatchSummary:
        counts = row.data.get("counts") or {}
        return cls(local_id=row.local_id, batch_id=row.batch_id, model=row.model, stage=row.stage, state=row.state,
                   vendor_status=row.vendor_status, requests=row.requests,
                   counts={str(k): int(v) for k, v in counts.items()}, outcomes=outcomes or {})


class AdvanceReport(BaseModel):
    """What one ``advance`` did."""

    run_id: str = Field(description="Run id.")
    collected: list[BatchSummary] = Field(default_factory=list, description="Batches read back now.")
    submitted: list[BatchSummary] = Field(default_factory=list, description="Batches created now.")
    in_flight: list[BatchSummary] = Field(default_factory=list, description="Batches the vendors still hold.")
    problems: list[str] = Field(default_factory=list, description="Polls, downloads or submissions that failed.")
    records_written: int = Field(default=0, description="Records (re)written by this pass's engine run.")
    records: int = Field(default=0, description="Records the run holds afterwards.")
    records_planned: int = Field(default=0, description="Records the run's plan holds.")
    cache_filled: int = Field(default=0, description="Responses put in the cache from result lines.")
    live_calls: int = Field(default=0, description="Live calls made (models not in batch mode only).")
    complete: bool = Field(default=False, description="Nothing pending and no batch open.")
    status: str = Field(default="running", description="The run's status afterwards.")
    message: str | None = Field(default=None, description="The run's message afterwards.")


def batch_models_for(spec: RunSpec, flag: bool) -> list[str]:
    """Models sent through batch engines: all with ``--batch``, else those with ``batch = true``.
    UsageError for a provider without a batch engine, or for ``refresh`` (batch answers live in the cache)."""
    models = [m.model for m in spec.models if flag or m.batch]
    bad = []
    for m in models:
        provider = ModelSpec.parse(m).provider
        profile = profile_for(provider)
        if not has_batch_engine(profile.name if profile else provider):
            bad.append(m)
    if bad:
        raise UsageError(f"batch mode: {', '.join(bad)} cannot go through a batch engine (probe supports the "
                         "OpenAI Batch API for openai/… and Message Batches for anthropic/… models); "
                         "drop --batch / batch = true for them")
    if models and spec.refresh:
        raise UsageError("--refresh cannot be combined with batch mode: batch answers reach the run through "
                         "the response cache")
    return models


def _new_local_id() -> str:
    return "pb_" + secrets.token_hex(8)


def _restricted(spec: RunSpec, models: list[str]) -> RunSpec:
    return spec.model_copy(update={"models": [m for m in spec.models if m.model in models]})


class _Ctx:
    def __init__(self, plan: Plan | None, store: Store, run_id: str, providers: Mapping[str, Provider], models: list[str],
                 vendors: dict[str, BatchVendor], limits: BatchLimits | None) -> None:
        self.plan = plan
        self.store = store
        self.bstore = BatchStore(store)
        self.run_id = run_id
        self.providers = providers
        self.models = models
        self.vendors = vendors
        self.limits = limits


# -- collecting ------------------------------------------------------------------------------------
def _failed(out: LineOutcome) -> CallFailure:
    assert out.failure is not None
    return out.failure


async def _read_results(ctx: _Ctx, row: BatchRow, info: BatchInfo, vendor: BatchVendor) -> int:
    """Stream an ended batch's lines into the cache and the request table; returns responses cached."""
    requests = ctx.bstore.requests(row.local_id)
    seen: set[str] = set()
    cache_items: list[tuple[str, Completion]] = []
    outcomes: list[tuple[str, str, CallFailure | None]] = []
    refused = False
    dropped: list[str] = []
    cached = 0

    def flush() -> None:
        nonlocal cached
        if cache_items:
            ctx.store.cache_put(cache_items)
            cached += len(cache_items)
        ctx.bstore.set_outcomes(row.local_id, outcomes)
        cache_items.clear()
        outcomes.clear()

    async for raw in vendor.result_lines(info):
        if not raw.strip():
            continue
        try:
            custom_id, line = vendor.parse_line(raw)
        except MalformedPayload:
            continue  # not a result line of ours; its request stays unanswered and fails below
        req = requests.get(custom_id)
        if req is None or custom_id in seen:
            continue
        seen.add(custom_id)
        try:
            out = vendor.read_line(custom_id, line, req.meta)
        except MalformedPayload as e:
            out = LineOutcome(custom_id=custom_id, failure=CallFailure(kind="malformed",
                                                                       message=f"unreadable result line: {e}"))
        if out.completion is not None:
            cache_items.append((req.cache_key, out.completion))
            outcomes.append((custom_id, "ok", None))
        elif out.relearn:
            refused = refused or out.logprobs_refused
            dropped += out.rejected_params
            outcomes.append((custom_id, "relearn", None))
        else:
            fail = _failed(out)
            outcomes.append((custom_id, f"error:{fail.kind}", fail))
        if len(outcomes) >= FLUSH_LINES:
            flush()
    flush()
    if refused or dropped:
        ctx.bstore.learn(ctx.run_id, row.model, logprobs_refused=refused, dropped=dropped)
    missing = _MISSING.get(info.missing_kind, _MISSING["malformed"])
    if info.missing_kind == "bad_request" and info.detail:
        missing += f": {info.detail}"
    ctx.bstore.fail_unanswered(row.local_id, CallFailure(kind=info.missing_kind, message=missing))
    return cached


async def _poll(ctx: _Ctx, row: BatchRow, report: AdvanceReport, *, collect: bool = True) -> None:
    vendor = ctx.vendors[row.model]
    assert row.batch_id is not None
    try:
        info = await vendor.retrieve(row.batch_id)
    except ProviderError as e:
        report.problems.append(f"{row.model}: polling batch {row.batch_id} failed ({e.failure.kind}): "
                               f"{e.failure.message}")
        report.in_flight.append(BatchSummary.of(row))
        return
    ctx.bstore.update(row.local_id, info)
    if not info.ended or not collect:
        report.in_flight.append(BatchSummary.of(ctx.bstore.get(row.local_id)))
        return
    try:
        report.cache_filled += await _read_results(ctx, row, info, vendor)
    except ProviderError as e:
        report.problems.append(f"{row.model}: downloading results of batch {row.batch_id} failed "
                               f"({e.failure.kind}): {e.failure.message}; the next collect tries again")
        report.in_flight.append(BatchSummary.of(ctx.bstore.get(row.local_id)))
        return
    ctx.bstore.update(row.local_id, info, state="collected")
    report.collected.append(BatchSummary.of(ctx.bstore.get(row.local_id), ctx.bstore.outcome_counts(row.local_id)))


# -- the engine pass and submission ----------------------------------------------------------------
class _Batcher:
    """One model's next batch, filled line by line and submitted when the next line would pass a limit
    (so a large plan never holds more than one batch per model in memory)."""

    def __init__(self, ctx: _Ctx, model: str, stage: int, report: AdvanceReport) -> None:
        self.ctx, self.model, self.stage, self.report = ctx, model, stage, report
        self.vendor = ctx.vendors[model]
        self.limits = ctx.limits or self.vendor.limits
        self.envelope = self.vendor.envelope_bytes()
        self.refused, self.dropped = ctx.bstore.learned(ctx.run_id, model)
        self.base = {"connection_key": ctx.providers[model].connection_key}
        self.lines: dict[str, BatchLine] = {}
        self.size = self.envelope
        self.failed = False

    async def add(self, call: PendingCall) -> None:
        if self.failed or call.key in self.lines:
            return
        line = self.vendor.build_line(custom_id_for(call.key), call.request, logprobs_refused=self.refused,
                                      dropped=self.dropped)
        if too_large(line.size, self.limits, self.envelope):
            self._too_large(call.key, line)
            return
        if starts_new_batch(len(self.lines), self.size, line.size, self.limits) and not await self.flush():
            return
        self.lines[call.key] = line
        self.size += line.size

    def _too_large(self, key: str, line: BatchLine) -> None:
        bstore, local_id = self.ctx.bstore, _new_local_id()
        bstore.add_batch(local_id, self.ctx.run_id, self.model, self.vendor.vendor, self.stage, 0,
                         [RequestRow(custom_id=line.custom_id, cache_key=key, meta=line.meta)],
                         {**self.base, "not_submitted": True})
        bstore.fail_unanswered(local_id, CallFailure(
            kind="bad_request", message=f"request larger than a whole batch may be ({self.limits.max_bytes} bytes): "
                                        "not submitted"))
        bstore.update(local_id, BatchInfo(batch_id="", vendor_status="not_submitted", ended=True), state="collected")

    async def flush(self) -> bool:
        """Submit what is filled; False once a submission for this model has failed."""
        if self.failed:
            return False
        if not self.lines:
            return True
        ctx, local_id = self.ctx, _new_local_id()
        part = list(self.lines.values())
        ctx.bstore.add_batch(local_id, ctx.run_id, self.model, self.vendor.vendor, self.stage, self.size,
                             [RequestRow(custom_id=line.custom_id, cache_key=key, meta=line.meta)
                              for key, line in self.lines.items()], self.base)
        self.lines, self.size = {}, self.envelope
        try:
            info = await self.vendor.submit(part, metadata={"probe_run": ctx.run_id, "probe_batch": local_id,
                                                            "probe_stage": str(self.stage)})
        except ProviderError as e:
            ctx.bstore.abandon(local_id, f"{e.failure.kind}: {e.failure.message}")
            self.report.problems.append(f"{self.model}: submitting {len(part)} requests failed ({e.failure.kind}): "
                                        f"{e.failure.message}")
            self.failed = True
            return False
        ctx.bstore.confirm(local_id, info)
        self.report.submitted.append(BatchSummary.of(ctx.bstore.get(local_id)))
        return True


async def _pass_and_submit(ctx: _Ctx, report: AdvanceReport) -> tuple[int, dict[str, str]]:
    """Run the engine (collect-only) over the units missing records, a slice at a time, and submit the
    pending calls not already in a batch. Returns (calls still pending, model ids reported)."""
    assert ctx.plan is not None
    wanted = set(ctx.models)
    units = [u for u in remaining_units(ctx.plan, ctx.store, ctx.run_id) if u.model in wanted]
    failures = ctx.bstore.failures(ctx.run_id)
    spec = _restricted(ctx.plan.spec, ctx.models)
    providers = {m: ctx.providers[m] for m in ctx.models}
    stage = ctx.bstore.next_stage(ctx.run_id)
    batchers = {m: _Batcher(ctx, m, stage, report) for m in ctx.models}
    pending = 0
    model_ids: dict[str, str] = {}
    for i in range(0, len(units), UNIT_SLICE):
        engine = Engine(ctx.store, ctx.run_id, spec, providers, RetryPolicy(), collect_only=True,
                        known_failure=failures.get)
        await engine.run(units[i:i + UNIT_SLICE])
        report.records_written += engine.progress.records
        model_ids.update(engine.model_ids)
        pending += len(engine.pending)
        in_flight = ctx.bstore.in_flight_among(ctx.run_id, [c.key for c in engine.pending])
        for call in engine.pending:
            if call.key not in in_flight:
                await batchers[call.model].add(call)
    for b in batchers.values():
        await b.flush()
    return pending, model_ids


def _abandon_cut_off(ctx: _Ctx, report: AdvanceReport) -> None:
    """A batch still ``submitting`` was cut off before the vendor confirmed it: its requests go again."""
    for row in ctx.bstore.batches(ctx.run_id, ["submitting"]):
        ctx.bstore.abandon(row.local_id, "the submitting process stopped before the vendor confirmed the batch")
        report.problems.append(f"{row.model}: a submission of {row.requests} requests was cut off before the vendor "
                               f"confirmed it; they are submitted again (if the vendor did create it, it is an "
                               f"orphan batch with metadata probe_batch={row.local_id})")


def _finish(ctx: _Ctx, report: AdvanceReport, pending: int, model_ids: dict[str, str]) -> None:
    info = ctx.store.get_run(ctx.run_id)
    open_rows = ctx.bstore.batches(ctx.run_id, OPEN_STATES)
    update: dict[str, object] = {"model_ids": {**info.model_ids, **model_ids}}
    hint = f"probe batch collect {ctx.run_id}"
    if not pending and not open_rows:
        report.complete = True
        failed = {s: n for s, n in ctx.store.status_counts(ctx.run_id).items() if s.startswith("error:")}
        message = None
        if failed:
            message = (f"{sum(failed.values())} records failed ({', '.join(f'{k} {v}' for k, v in sorted(failed.items()))}); "
                       f"retry live: probe run --resume {ctx.run_id}; or in a new batch: add --batch")
        update |= {"status": "completed", "finished_at": datetime.now(UTC), "message": message}
    elif open_rows:
        n = sum(r.requests for r in open_rows)
        update |= {"status": "running", "finished_at": None,
                   "message": f"waiting for the batch engine: {len(open_rows)} batches ({n} requests) in flight; "
                              f"collect with: {hint}"}
    else:
        update |= {"status": "interrupted", "finished_at": None,
                   "message": f"{pending} requests could not be submitted ({'; '.join(report.problems)[:300]}); "
                              f"retry with: {hint}"}
    info = info.model_copy(update=update)
    ctx.store.update_run(info)
    report.records = sum(ctx.store.status_counts(ctx.run_id).values())
    report.records_planned = info.planned_records
    report.status = info.status
    report.message = info.message


# -- entry points ----------------------------------------------------------------------------------
def _open_vendors(providers: Mapping[str, Provider], models: list[str],
                  env: Mapping[str, str] | None) -> dict[str, BatchVendor]:
    return {m: open_batch_vendor(providers[m], env) for m in models}


async def _close(vendors: dict[str, BatchVendor]) -> None:
    for v in vendors.values():
        await v.aclose()


async def advance(plan: Plan, store: Store, run_id: str, providers: Mapping[str, Provider], models: list[str], *,
                  env: Mapping[str, str] | None = None, limits: BatchLimits | None = None) -> AdvanceReport:
    """Collect what has ended, write the records it completes, submit the next stage. Idempotent: running it
    again (from any process) picks up where the database says things are."""
    report = AdvanceReport(run_id=run_id)
    vendors = _open_vendors(providers, models, env)
    ctx = _Ctx(plan, store, run_id, providers, models, vendors, limits)
    try:
        _abandon_cut_off(ctx, report)
        for row in ctx.bstore.batches(run_id, ["in_progress"]):
            await _poll(ctx, row, report)
        pending, model_ids = await _pass_and_submit(ctx, report)
        _finish(ctx, report, pending, model_ids)
    finally:
        await _close(vendors)
    return report


async def start(plan: Plan, store: Store, info: RunInfo, providers: Mapping[str, Provider], models: list[str], *,
                retry_failed: bool = False, env: Mapping[str, str] | None = None, limits: BatchLimits | None = None,
                live_policy: RetryPolicy | None = None) -> AdvanceReport:
    """``probe run --batch``: models not in batch mode run live first, then the batch models are advanced
    (a resumed run collects what has ended before submitting). ``retry_failed`` lets failed batch lines
    be submitted again."""
    bstore = BatchStore(store)
    bstore.register_run(info.run_id, models)
    if retry_failed:
        bstore.retire_failures(info.run_id)
    store.update_run(info.model_copy(update={"status": "running", "started_at": info.started_at or datetime.now(UTC),
                                             "finished_at": None, "message": None}))
    live = [m.model for m in plan.spec.models if m.model not in models]
    calls = 0
    problems: list[str] = []
    if live:
        units = [u for u in remaining_units(plan, store, info.run_id) if u.model in set(live)]
        engine = Engine(store, info.run_id, _restricted(plan.spec, live), {m: providers[m] for m in live},
                        live_policy or RetryPolicy())
        try:
            await engine.run(units)
        except Exception as e:  # the engine stops on an auth/quota failure: the batch models still go out
            stopped = getattr(e, "failure", None)
            if not isinstance(stopped, CallFailure):
                raise
            problems.append(f"live models stopped ({stopped.kind}): {stopped.message}")
        calls = engine.progress.calls
        current = store.get_run(info.run_id)
        store.update_run(current.model_copy(update={"model_ids": {**current.model_ids, **engine.model_ids}}))
    report = await advance(plan, store, info.run_id, providers, models, env=env, limits=limits)
    report.live_calls = calls
    report.problems[:0] = problems
    return report


async def collect(plan: Plan, store: Store, run_id: str, providers: Mapping[str, Provider], models: list[str], *,
                  wait: bool = False, interval_s: float = 30.0, timeout_s: float | None = None,
                  env: Mapping[str, str] | None = None, limits: BatchLimits | None = None,
                  on_report: Callable[[AdvanceReport], None] | None = None) -> AdvanceReport:
    """``probe batch collect``: one advance, or (``wait``) advances every ``interval_s`` until complete."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        report = await advance(plan, store, run_id, providers, models, env=env, limits=limits)
        if on_report is not None:
            on_report(report)
        if report.complete or not wait or not (report.in_flight or report.submitted):
            return report
        if deadline is not None and time.monotonic() + interval_s > deadline:
            return report
        await asyncio.sleep(interval_s)


async def poll_status(store: Store, run_id: str, providers: Mapping[str, Provider], models: list[str], *,
                      env: Mapping[str, str] | None = None) -> tuple[list[BatchSummary], list[str]]:
    """``probe batch status``: refresh the vendor status of open batches (nothing is downloaded)."""
    vendors = _open_vendors(providers, models, env)
    report = AdvanceReport(run_id=run_id)
    ctx = _Ctx(None, store, run_id, providers, models, vendors, None)
    try:
        for row in ctx.bstore.batches(run_id, ["in_progress"]):
            if row.model in vendors:
                await _poll(ctx, row, report, collect=False)
    finally:
        await _close(vendors)
    return stored_summaries(store, run_id), report.problems


def stored_summaries(store: Store, run_id: str) -> list[BatchSummary]:
    bstore = BatchStore(store)
    return [BatchSummary.of(r, bstore.outcome_counts(r.local_id)) for r in bstore.batches(run_id)]
