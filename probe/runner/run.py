"""Preparing, executing and resuming runs; the summary they print."""

from __future__ import annotations

import asyncio
import gc
import os
import secrets
from collections.abc import Callable, Coroutine, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from probe import __version__
from probe.errors import Failure, UsageError
from probe.prompts import answer_prompt, ptrue_prompt, verbal_prompt
from probe.record import Record, Sampling
from probe.runner.engine import ANSWER_MAX_TOKENS, VERBAL_MAX_TOKENS, Engine, FatalCallError, Progress
from probe.runner.plan import Unit, build_units
from probe.runner.spec import RunSpec
from probe.storage import RunInfo, Store, SuiteRef
from probe.suite import Suite
from probe.suite_io import resolve_suite
from providers import Provider, create_provider
from providers.retry import RetryPolicy

FINAL_STATUSES_PREFIX = ("ok", "parse_error", "unavailable:")
T = TypeVar("T")


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run the runner's coroutine with the cyclic garbage collector tuned for the hot path.

    Each response allocates many short-lived objects (pydantic models, dicts); with the default
    thresholds the collector keeps rescanning the long-lived heap (suites, plan). Freezing what
    exists at start and collecting the young generation less often cut the client's CPU per
    request by about a fifth here (bench/runner_throughput.py). Thresholds are restored after.

    The standard asyncio loop, not uvloop: measured side by side on this machine (2,000 requests,
    64 in flight, 50 ms), uvloop gave 0.54-0.70 of the ideal rate and asyncio 0.75-0.79 at the
    same CPU per request; uvloop hands over completed responses in larger bursts, and a burst
    delays the next requests by its whole processing time.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(20_000, 20, 100)
    try:
        return asyncio.run(main)
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def new_run_id() -> str:
    return datetime.now(UTC).strftime("r%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def is_final(status: str) -> bool:
    """A record that need not be redone on resume (errors are redone)."""
    return status.startswith(FINAL_STATUSES_PREFIX)


class Plan(BaseModel):
    """What a run will do, computed before anything is spent."""

    model_config = {"arbitrary_types_allowed": True}

    spec: RunSpec
    suites: list[Suite]
    units: list[Unit]


def make_plan(spec: RunSpec) -> Plan:
    suites = [resolve_suite(s) for s in spec.suites]
    names = [s.name for s in suites]
    if len(set(names)) != len(names):
        raise UsageError(f"a suite is listed twice: {names}")
    units = build_units([m.model for m in spec.models], suites, spec.variants, list(spec.sources), spec.limit)
    return Plan(spec=spec, suites=suites, units=units)


class CostLine(BaseModel):
    model: str
    source: str
    calls: int = Field(description="Requests planned (before cache).")
    input_tokens: int = Field(description="Estimated prompt tokens (characters / 4).")
    output_tokens: int = Field(description="Upper bound of generated tokens (max_tokens × choices).")


def estimate(plan: Plan, supports_n: Mapping[str, bool]) -> list[CostLine]:
    """Planned calls and a token estimate per model and source (no request is made)."""
    acc: dict[tuple[str, str], list[int]] = {}

    def add(model: str, source: str, calls: int, chars: int, out: int) -> None:
        row = acc.setdefault((model, source), [0, 0, 0])
        row[0] += calls
        row[1] += calls * (chars // 4 + 4)
        row[2] += out

    k = plan.spec.samples
    for u in plan.units:
        ap = answer_prompt(u.question, u.variant)
        chars = sum(len(m.content) for m in ap.messages)
        amax = ANSWER_MAX_TOKENS[u.question.kind]
        if "token" in u.sources or "ptrue" in u.sources:
            add(u.model, "token" if "token" in u.sources else "ptrue", 1, chars, amax)
        if "ptrue" in u.sources:
            pp = ptrue_prompt(u.question, u.variant, u.question.correct_text)
            add(u.model, "ptrue", 1, sum(len(m.content) for m in pp.messages), ANSWER_MAX_TOKENS["mc"])
        if "verbal" in u.sources:
            for form in ("numeric", "linguistic"):
                vp = verbal_prompt(u.question, u.variant, form)
                add(u.model, "verbal", 1, sum(len(m.content) for m in vp.messages), VERBAL_MAX_TOKENS)
        if "consistency" in u.sources:
            calls = 1 if supports_n.get(u.model, False) else k
            add(u.model, "consistency", calls, chars, amax * k)
    return [CostLine(model=m, source=s, calls=v[0], input_tokens=v[1], output_tokens=v[2])
            for (m, s), v in acc.items()]


class SummaryLine(BaseModel):
    """One row of the end-of-run table."""

    model: str
    source: str
    records: int
    ok: int
    accuracy: float | None = Field(description="Share correct among ok records.")
    mean_confidence: float | None = Field(description="Mean confidence among ok records.")
    statuses: dict[str, int] = Field(description="Records by status.")
    input_tokens: int
    output_tokens: int


def summarize(records: list[Record]) -> list[SummaryLine]:
    groups: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        groups.setdefault((r.model, r.source), []).append(r)
    out = []
    for (model, source), rs in sorted(groups.items()):
        ok = [r for r in rs if r.status == "ok" and r.confidence is not None and r.correct is not None]
        statuses: dict[str, int] = {}
        for r in rs:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        out.append(SummaryLine(
            model=model, source=source, records=len(rs), ok=len(ok),
            accuracy=sum(bool(r.correct) for r in ok) / len(ok) if ok else None,
            mean_confidence=sum(r.confidence or 0.0 for r in ok) / len(ok) if ok else None,
            statuses=dict(sorted(statuses.items())),
            input_tokens=sum(r.input_tokens or 0 for r in rs), output_tokens=sum(r.output_tokens or 0 for r in rs),
        ))
    return out


def open_providers(spec: RunSpec, env: Mapping[str, str] | None = None) -> dict[str, Provider]:
    """Create every model's provider; a missing key or unknown provider fails here, before any call."""
    environ = dict(os.environ if env is None else env)
    return {cfg.model: create_provider(cfg.spec(), environ) for cfg in spec.models}


async def close_providers(providers: dict[str, Provider]) -> None:
    for p in providers.values():
        await p.aclose()


def new_run(plan: Plan, store: Store, run_id: str | None = None) -> RunInfo:
    spec = plan.spec
    info = RunInfo(
        run_id=run_id or new_run_id(), status="queued",
        suites=[SuiteRef(name=s.name, version=s.version, fingerprint=s.fingerprint,
                         questions=len(s.questions[: spec.limit])) for s in plan.suites],
        models=[m.model for m in spec.models], sources=list(spec.sources),
        variants=sorted({u.variant.id for u in plan.units}),
        sampling=Sampling(temperature=spec.temperature, n=spec.samples, top_logprobs=spec.top_logprobs),
        samples=spec.samples, limit=spec.limit, probe_version=__version__,
        planned_records=sum(len(u.record_keys()) for u in plan.units),
        spec={**spec.model_dump(mode="json"), "fingerprint": spec.fingerprint()},
    )
    store.create_run(info)
    return info


def find_resumable(store: Store, spec: RunSpec) -> RunInfo | None:
    """The latest unfinished run of the same plan, which a re-run with the same arguments resumes."""
    fp = spec.fingerprint()
    for info in store.list_runs(limit=50):
        if info.spec.get("fingerprint") == fp and info.status in ("interrupted", "running", "failed", "queued"):
            return info
    return None


def remaining_units(plan: Plan, store: Store, run_id: str) -> list[Unit]:
    """Units with a record missing or failed (errors are redone; ok/parse_error/unavailable are kept)."""
    statuses = store.record_statuses(run_id)
    return [u for u in plan.units
            if not all(k in statuses and is_final(statuses[k]) for k in u.record_keys())]


async def execute(plan: Plan, store: Store, info: RunInfo, providers: dict[str, Provider],
                  policy: RetryPolicy | None = None,
                  on_progress: Callable[[Progress], None] | None = None,
                  on_start: Callable[[Engine, int], None] | None = None) -> RunInfo:
    """Run what is left of ``info``'s plan; marks the run completed, or interrupted on cancel."""
    units = remaining_units(plan, store, info.run_id)
    engine = Engine(store, info.run_id, plan.spec, providers, policy or RetryPolicy(), on_progress)
    info = info.model_copy(update={"status": "running", "started_at": info.started_at or datetime.now(UTC),
                                   "finished_at": None, "message": None})
    store.update_run(info)
    if on_start:
        on_start(engine, len(units))
    try:
        await engine.run(units)
    except (asyncio.CancelledError, KeyboardInterrupt):
        info = info.model_copy(update={"status": "interrupted", "model_ids": {**info.model_ids, **engine.model_ids},
                                       "message": "interrupted; resume with: probe run --resume " + info.run_id})
        store.update_run(info)
        raise
    except FatalCallError as e:
        info = info.model_copy(update={"status": "failed", "finished_at": datetime.now(UTC),
                                       "model_ids": {**info.model_ids, **engine.model_ids},
                                       "message": str(e)})
        store.update_run(info)
        raise Failure(f"run {info.run_id} stopped: {e}\nfix it, then resume with: probe run --resume "
                      f"{info.run_id}") from None
    except Exception as e:
        info = info.model_copy(update={"status": "failed", "finished_at": datetime.now(UTC),
                                       "model_ids": {**info.model_ids, **engine.model_ids},
                                       "message": f"{type(e).__name__}: {e}"})
        store.update_run(info)
        raise
    info = info.model_copy(update={"status": "completed", "finished_at": datetime.now(UTC),
                                   "model_ids": {**info.model_ids, **engine.model_ids}})
    store.update_run(info)
    return info
