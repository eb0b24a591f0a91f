"""``probe schedule add|list|remove|run-due``: persistent cron schedules, for the service or for system cron."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.table import Column, Table

from probe.cli._common import console, open_store, print_json
from probe.cli.run import _spec_from_flags, simulator_if_needed
from probe.errors import UsageError
from probe.runner.run import make_plan, open_providers
from probe.service.alerts import list_alerts
from probe.service.scheduler import ScheduleSpec, add_schedule, get_schedule, list_schedules, remove_schedule
from probe.storage import DEFAULT_DB, Store

app = typer.Typer(help="Cron schedules that re-run a spec and raise drift alerts.", no_args_is_help=True)


def _store(db: Path, must_exist: bool = True) -> Store:
    return open_store(db) if must_exist else Store(db)


@app.command("add")
def add(
    cron: str = typer.Option(..., "--cron", help="5-field cron expression, e.g. '0 3 * * 1' (Mondays 03:00)."),
    timezone: str = typer.Option("UTC", "--timezone", help="IANA time zone the cron expression is read in."),
    webhook: str | None = typer.Option(None, "--webhook", help="URL that receives drift alerts (JSON POST)."),
    suite: list[str] = typer.Option([], "--suite", "-s", help="Suite name or directory (repeatable)."),
    model: list[str] = typer.Option([], "--model", "-m", help="provider/model (repeatable)."),
    source: str | None = typer.Option(None, "--source", help="Comma-separated: token,ptrue,verbal,consistency."),
    variant: list[str] = typer.Option([], "--variant", help="Prompt variant id (repeatable) or 'all'."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="First N questions of each suite."),
    samples: int | None = typer.Option(None, "--samples", min=2, help="Samples for consistency (default 5)."),
    temperature: float | None = typer.Option(None, "--temperature", min=0, max=2, help="Consistency temperature."),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Requests in flight per model."),
    config: Path | None = typer.Option(None, "--config", help="run.toml with the run's fields."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    json_out: bool = typer.Option(False, "--json", help="Print the schedule as JSON."),
) -> None:
    """Add a schedule: the run described by the flags (as for `probe run`) starts at every cron fire."""
    spec = _spec_from_flags(suite, model, source, variant, limit, samples, temperature, concurrency, False, config)
    try:
        sched_spec = ScheduleSpec(cron=cron, timezone=timezone, run=spec, webhook=webhook)
    except ValidationError as e:
        raise UsageError("\n".join(f"--{'.'.join(str(p) for p in err['loc'])}: "
                                   f"{str(err['msg']).removeprefix('Value error, ')}" for err in e.errors())) from None
    make_plan(spec)  # suites and variants resolve now, not at 3 a.m.
    providers = open_providers(spec)  # unknown provider or missing key: exit 2 now
    for p in providers.values():
        asyncio.run(p.aclose())
    sched = add_schedule(_store(db, must_exist=False), sched_spec, datetime.now(UTC))
    if json_out:
        print_json(sched.model_dump(mode="json"))
    else:
        console.print(f"schedule [bold]{sched.schedule_id}[/bold] added; next fire "
                      f"{sched.next_fire_at:%Y-%m-%d %H:%M} UTC")


@app.command("list")
def list_(
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    json_out: bool = typer.Option(False, "--json", help="Print {\"schedules\": [...]} as GET /v1/schedules does."),
) -> None:
    """List schedules with their next fire time."""
    schedules = list_schedules(_store(db))
    if json_out:
        print_json({"schedules": [s.model_dump(mode="json") for s in schedules]})
        return
    t = Table(Column("schedule", no_wrap=True), Column("cron", no_wrap=True), "time zone",
              Column("next fire (UTC)", no_wrap=True), "suites", "models", Column("last run", no_wrap=True), "webhook")
    for s in schedules:
        t.add_row(s.schedule_id, s.cron, s.timezone, f"{s.next_fire_at:%Y-%m-%d %H:%M}", ", ".join(s.run.suites),
                  ", ".join(m.model for m in s.run.models), s.last_run_id or "-", "yes" if s.webhook else "no")
    console.print(t)


@app.command("remove")
def remove(
    schedule_id: str = typer.Argument(..., help="Schedule id."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
) -> None:
    """Remove a schedule (its runs and alerts stay)."""
    if not remove_schedule(_store(db), schedule_id):
        raise UsageError(f"no schedule {schedule_id!r} in {db}")
    console.print(f"removed schedule {schedule_id}")


@app.command("run-due")
def run_due_command(
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    schedule: str | None = typer.Option(None, "--schedule", help="Only this schedule."),
    now: bool = typer.Option(False, "--now", help="Fire --schedule now even if it is not due."),
    json_out: bool = typer.Option(False, "--json", help="Print the runs and alerts as JSON."),
) -> None:
    """Start the runs of due schedules and wait for them (for system cron or a Kubernetes CronJob).

    Safe next to `probe serve` on the same database: a fire is claimed by one process only.
    """
    from probe.service.due import run_due

    if now and schedule is None:
        raise UsageError("--now needs --schedule ID")
    store = _store(db)
    if schedule is not None:
        try:
            get_schedule(store, schedule)
        except KeyError:
            raise UsageError(f"no schedule {schedule!r} in {db}") from None
    done = asyncio.run(run_due(store, env=lambda: os.environ, only=schedule, now=now,
                               sim=simulator_if_needed))
    alerts = [a for info in done for a in list_alerts(store, run_id=info.run_id, limit=1000)[1]]
    if json_out:
        print_json({"runs": [{"run_id": i.run_id, "status": i.status, "message": i.message} for i in done],
                    "alerts": [a.model_dump(mode="json") for a in alerts]})
        return
    if not done:
        console.print("nothing due")
    for info in done:
        console.print(f"run {info.run_id}: {info.status}" + (f" ({info.message})" if info.message else ""))
    for a in alerts:
        console.print(f"[yellow]drift:[/yellow] {a.message}" + (f" (webhook: {a.webhook_status})"
                                                                 if a.webhook_status else ""))
