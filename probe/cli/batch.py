"""``probe batch status`` / ``probe batch collect``, and the batch side of ``probe run --batch``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.table import Table

from probe.batch import (
    AdvanceReport,
    BatchSummary,
    collect,
    estimate_costs,
    poll_status,
    start,
)
from probe.batch.cost import cost_caption
from probe.batch.flow import stored_summaries
from probe.batch.store import BatchStore
from probe.cli._common import console, err_console, find_run, open_store, print_json
from probe.errors import Failure, UsageError
from probe.runner.run import CostLine, Plan, close_providers, make_plan, open_providers, summarize
from probe.runner.spec import RunSpec, validate_spec
from probe.storage import DEFAULT_DB, RunInfo, Store

app = typer.Typer(help="Runs sent through the vendors' batch engines (probe run --batch): status and collection.",
                  no_args_is_help=True)


# -- shared with probe run ----------------------------------------------------------------------------
def cost_json(costs: list[CostLine]) -> dict[str, object]:
    """The dry run's cost estimate as JSON."""
    return {"note": cost_caption(), "models": [c.model_dump() for c in estimate_costs(costs)]}


def print_costs(costs: list[CostLine]) -> None:
    """The dry run's live vs batch cost table."""
    t = Table("model", "calls", "≈ input tokens", "≤ output tokens", "live ≈ USD", "batch ≈ USD",
              title="estimated cost: live vs batch")
    for c in estimate_costs(costs):
        batch = f"{c.batch_usd:.4f}" if c.batch_usd is not None else ("-" if c.live_usd is None else "no batch engine")
        t.add_row(c.model, str(c.calls), str(c.input_tokens), str(c.output_tokens),
                  f"{c.live_usd:.4f}" if c.live_usd is not None else "- (no price known)", batch)
    console.print(t)
    console.print(cost_caption())


def _summary_rows(title: str, rows: list[BatchSummary]) -> Table:
    t = Table("batch", "vendor id", "model", "stage", "state", "vendor status", "requests", "counts", "lines read",
              title=title)
    for b in rows:
        t.add_row(b.local_id, b.batch_id or "-", b.model, str(b.stage), b.state, b.vendor_status or "-",
                  str(b.requests), ", ".join(f"{k} {v}" for k, v in b.counts.items()) or "-",
                  ", ".join(f"{k} {v}" for k, v in sorted(b.outcomes.items())) or "-")
    return t


def _print_report(report: AdvanceReport, store: Store, json_out: bool) -> None:
    if json_out:
        out = report.model_dump(mode="json")
        if report.complete:
            out["summary"] = [x.model_dump() for x in summarize(store.records(report.run_id))]
        print_json(out)
        return
    for title, rows in (("collected", report.collected), ("submitted", report.submitted),
                        ("in flight", report.in_flight)):
        if rows:
            console.print(_summary_rows(f"{title} ({len(rows)})", rows))
    for p in report.problems:
        err_console.print(f"[yellow]warning:[/yellow] {p}", markup=True, highlight=False, soft_wrap=True)
    console.print(f"records: {report.records} of {report.records_planned} planned   responses cached from "
                  f"results: {report.cache_filled}" + (f"   live calls: {report.live_calls}" if report.live_calls else ""))
    if report.complete:
        from probe.cli.run import _print_summary

        _print_summary(store.get_run(report.run_id), summarize(store.records(report.run_id)), store)
    if report.message:
        console.print(report.message)


def run_batch(plan: Plan, store: Store, info: RunInfo, models: list[str], json_out: bool, *,
              retry_failed: bool) -> RunInfo:
    """``probe run --batch``: run live models, submit the batch models' requests, print what was sent."""
    providers = open_providers(plan.spec)

    async def go() -> AdvanceReport:
        try:
            return await start(plan, store, info, providers, models, retry_failed=retry_failed)
        finally:
            await close_providers(providers)

    try:
        report = asyncio.run(go())
    except KeyboardInterrupt:
        err_console.print(f"\nstopped. What was submitted is recorded; continue with: probe batch collect "
                          f"{info.run_id}" + (f" --db {store.path}" if store.path != DEFAULT_DB else ""))
        raise typer.Exit(130) from None
    _print_report(report, store, json_out)
    if report.status == "interrupted":
        raise Failure(report.message or "batch submission failed")
    return store.get_run(info.run_id)


def warn_live_resume(store: Store, run_id: str) -> None:
    """A live resume of a run with batches in flight sends their requests twice: say so."""
    keys = BatchStore(store).in_flight_keys(run_id)
    if keys:
        err_console.print(f"[yellow]warning:[/yellow] {len(keys)} requests of run {run_id} are still in a vendor "
                          f"batch; they are sent live as well (collect instead: probe batch collect {run_id})",
                          markup=True, highlight=False)


# -- probe batch … ------------------------------------------------------------------------------------
def _open(run_id: str, db: Path) -> tuple[Store, RunInfo, list[str]]:
    store = open_store(db)
    info = find_run(store, run_id)
    models = BatchStore(store).run_models(info.run_id)
    if not models:
        raise UsageError(f"run {info.run_id} has no batch submissions (start one with: probe run … --batch)")
    return store, info, models


def _spec(info: RunInfo, models: list[str]) -> RunSpec:
    spec = validate_spec({k: v for k, v in info.spec.items() if k != "fingerprint"}, f"run {info.run_id}")
    return spec.model_copy(update={"models": [m for m in spec.models if m.model in models]})


@app.command("status")
def status(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    poll: bool = typer.Option(True, "--poll/--no-poll", help="Ask the vendors for the current state (needs keys)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show a batch run's batches: vendor ids, status, request counts, lines read back."""
    store, info, models = _open(run_id, db)
    problems: list[str] = []
    if poll:
        providers = open_providers(_spec(info, models))

        async def go() -> tuple[list[BatchSummary], list[str]]:
            try:
                return await poll_status(store, info.run_id, providers, models)
            finally:
                await close_providers(providers)

        rows, problems = asyncio.run(go())
    else:
        rows = stored_summaries(store, info.run_id)
    info = store.get_run(info.run_id)
    if json_out:
        print_json({"run_id": info.run_id, "status": info.status, "message": info.message,
                    "batches": [r.model_dump() for r in rows], "problems": problems})
        return
    console.print(_summary_rows(f"run {info.run_id} ({info.status})", rows))
    for p in problems:
        err_console.print(f"[yellow]warning:[/yellow] {p}", markup=True, highlight=False, soft_wrap=True)
    if info.message:
        console.print(info.message)


@app.command("collect")
def collect_command(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    wait: bool = typer.Option(False, "--wait", help="Keep polling until the run is complete."),
    interval: float = typer.Option(30.0, "--interval", min=0.0, help="Seconds between polls with --wait."),
    timeout: float | None = typer.Option(None, "--timeout", min=0.0, help="Stop waiting after this many seconds."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Download ended batches, write their records, and submit the next stage (ptrue's self-evaluation)."""
    store, info, models = _open(run_id, db)
    spec = _spec(info, models)
    plan = make_plan(validate_spec({k: v for k, v in info.spec.items() if k != "fingerprint"}, f"run {info.run_id}"))
    changed = [s.name for s in plan.suites for ref in info.suites if ref.name == s.name and
               ref.fingerprint != s.fingerprint]
    if changed:
        err_console.print(f"[yellow]warning:[/yellow] suites changed since the run started: {', '.join(changed)}; "
                          "their changed questions are submitted anew", markup=True, highlight=False)
    providers = open_providers(spec)

    def shown(report: AdvanceReport) -> None:
        if wait and not json_out and not report.complete:
            _print_report(report, store, json_out)

    async def go() -> AdvanceReport:
        try:
            return await collect(plan, store, info.run_id, providers, models, wait=wait, interval_s=interval,
                                 timeout_s=timeout, on_report=shown)
        finally:
            await close_providers(providers)

    try:
        report = asyncio.run(go())
    except KeyboardInterrupt:
        err_console.print(f"\nstopped. Nothing read is lost; continue with: probe batch collect {info.run_id}")
        raise typer.Exit(130) from None
    _print_report(report, store, json_out)
    if report.status == "interrupted":
        raise Failure(report.message or "batch submission failed")
