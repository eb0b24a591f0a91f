"""``probe run``, ``probe export`` and ``probe demo``."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Column, Table

from probe.analysis import build_report
from probe.analysis.report import GroupReport
from probe.batch import batch_models_for
from probe.cli._common import console, err_console, find_run, open_store, print_json
from probe.cli.batch import cost_json, print_costs, run_batch, warn_live_resume
from probe.errors import UsageError
from probe.fileio import write_text_atomic
from probe.reports import render_run_report
from probe.runner.engine import Engine
from probe.runner.engine import Progress as RunProgress
from probe.runner.run import (
    Plan,
    SummaryLine,
    close_providers,
    estimate,
    execute,
    find_resumable,
    make_plan,
    new_run,
    open_providers,
    run_loop,
    summarize,
)
from probe.runner.spec import RunSpec, load_run_config, validate_spec
from probe.storage import DEFAULT_DB, RunInfo, Store

SIM_ENV = "SIM_BASE_URL"


@contextlib.contextmanager
def simulator_if_needed(spec: RunSpec) -> Iterator[None]:
    """Start the in-process simulator when a sim/ model is asked for and none is configured."""
    needs = any(m.model.startswith("sim/") and not m.base_url for m in spec.models)
    if not needs or os.environ.get(SIM_ENV):
        yield
        return
    from probe.sim import running_sim

    extra = [s for s in spec.suites if Path(s).exists()]
    with running_sim(suites=extra) as url:
        os.environ[SIM_ENV] = url
        try:
            yield
        finally:
            os.environ.pop(SIM_ENV, None)


def _spec_from_flags(suite: list[str], model: list[str], source: str | None, variant: list[str],
                     limit: int | None, samples: int | None, temperature: float | None,
                     concurrency: int | None, refresh: bool, config: Path | None) -> RunSpec:
    data: dict[str, Any] = {}
    where = "command line"
    if config is not None:
        data = load_run_config(config).model_dump(exclude_defaults=True)
        where = str(config)
    overrides: dict[str, Any] = {
        "suites": suite or None, "models": model or None, "sources": source,
        "variants": None if not variant or variant == ["all"] else variant, "limit": limit,
        "samples": samples, "temperature": temperature, "concurrency": concurrency,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    if refresh:
        data["refresh"] = True
    if not data.get("suites"):
        raise UsageError("no suite given: use --suite NAME (see `probe suites list`) or --config run.toml")
    if not data.get("models"):
        raise UsageError("no model given: use --model provider/model, e.g. --model sim/calibrated")
    return validate_spec(data, where)


def _print_summary(info: RunInfo, lines: list[SummaryLine], store: Store) -> None:
    table = Table("model", "source", "records", "ok", "accuracy", "mean conf.", "not ok", "tokens in/out",
                  title=f"run {info.run_id} ({info.status})")
    for s in lines:
        bad = ", ".join(f"{k} {v}" for k, v in s.statuses.items() if k != "ok") or "-"
        table.add_row(s.model, s.source, str(s.records), str(s.ok),
                      f"{s.accuracy:.3f}" if s.accuracy is not None else "-",
                      f"{s.mean_confidence:.3f}" if s.mean_confidence is not None else "-",
                      bad, f"{s.input_tokens}/{s.output_tokens}")
    console.print(table)
    console.print(f"run id: [bold]{info.run_id}[/bold]   database: {store.path}")


async def _execute_with_progress(plan: Plan, store: Store, info: RunInfo, show_progress: bool) -> RunInfo:
    providers = open_providers(plan.spec)
    try:
        if not show_progress:
            return await execute(plan, store, info, providers)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[rate]:.1f} calls/s  cached {task.fields[cached]}  "
                                 "errors {task.fields[errors]}"),
                      TimeRemainingColumn(), console=err_console, transient=False) as bar:
            task = bar.add_task("items", total=None, rate=0.0, cached=0, errors=0)
            last = [0.0]

            def started(_: Engine, n: int) -> None:
                bar.update(task, total=n)

            def progress(p: RunProgress) -> None:
                now = time.monotonic()
                if now - last[0] > 0.1 or p.units_done == p.units_total:
                    last[0] = now
                    bar.update(task, completed=p.units_done, rate=p.calls_per_s(), cached=p.cache_hits,
                               errors=p.errors)

            return await execute(plan, store, info, providers, on_progress=progress, on_start=started)
    finally:
        await close_providers(providers)


def run_command(spec: RunSpec, db: Path, json_out: bool, resume: str | None, dry_run: bool,
                batch: bool = False, emit: bool = True) -> RunInfo | None:
    store = Store(db)
    plan = make_plan(spec)
    if dry_run:
        providers = open_providers(spec)  # fails on a missing key before anything is spent
        supports_n = {m: p.capabilities.supports_n for m, p in providers.items()}
        asyncio.run(close_providers(providers))
        costs = estimate(plan, supports_n)
        if json_out:
            print_json({"units": len(plan.units), "plan": [x.model_dump() for x in costs], "cost": cost_json(costs)})
        else:
            t = Table("model", "source", "calls", "≈ input tokens", "≤ output tokens", title="dry run: nothing sent")
            for x in costs:
                t.add_row(x.model, x.source, str(x.calls), str(x.input_tokens), str(x.output_tokens))
            console.print(t)
            console.print(f"{len(plan.units)} items × variants; calls before cache: {sum(x.calls for x in costs)}")
            print_costs(costs)
        return None
    batch_models = batch_models_for(spec, batch)  # a model without a batch engine fails here, before a run exists
    if resume:
        info = find_run(store, resume)
        if info.status == "completed":
            err_console.print(f"run {info.run_id} is already complete; re-checking for missing records")
    else:
        existing = find_resumable(store, spec)
        if existing is not None:
            err_console.print(f"resuming unfinished run {existing.run_id} of the same plan")
            info = existing
        else:
            info = new_run(plan, store)
    if batch_models:
        with simulator_if_needed(spec):
            return run_batch(plan, store, info, batch_models, json_out, retry_failed=info.started_at is not None)
    warn_live_resume(store, info.run_id)
    show = not json_out and sys.stderr.isatty()
    try:
        with simulator_if_needed(spec):
            info = run_loop(_execute_with_progress(plan, store, info, show))
    except KeyboardInterrupt:
        err_console.print(f"\nstopped. Nothing finished is lost; resume with: probe run --resume {info.run_id}"
                          + (f" --db {db}" if db != DEFAULT_DB else ""))
        raise typer.Exit(130) from None
    if emit:
        lines = summarize(store.records(info.run_id))
        if json_out:
            print_json(run_summary_json(info, lines, store))
        else:
            _print_summary(info, lines, store)
    return info


def run_summary_json(info: RunInfo, lines: list[SummaryLine], store: Store) -> dict[str, Any]:
    return {"run_id": info.run_id, "status": info.status, "db": str(store.path),
            "summary": [x.model_dump() for x in lines]}


def run(
    suite: list[str] = typer.Option([], "--suite", "-s", help="Suite name or directory (repeatable)."),
    model: list[str] = typer.Option([], "--model", "-m", help="provider/model (repeatable), e.g. sim/calibrated."),
    source: str | None = typer.Option(None, "--source", help="Comma-separated: token,ptrue,verbal,consistency."),
    variant: list[str] = typer.Option([], "--variant", help="Prompt variant id (repeatable) or 'all'."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="First N questions of each suite."),
    samples: int | None = typer.Option(None, "--samples", min=2, help="Samples for consistency (default 5)."),
    temperature: float | None = typer.Option(None, "--temperature", min=0, max=2,
                                             help="Temperature for consistency samples (default 1.0)."),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Requests in flight per model."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object (run_id, summary)."),
    config: Path | None = typer.Option(None, "--config", help="run.toml with the same fields."),
    resume: str | None = typer.Option(None, "--resume", help="Complete what is missing or failed in RUN_ID."),
    refresh: bool = typer.Option(False, "--refresh", help="Bypass the response cache."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print planned calls and token estimates; send nothing."),
    batch: bool = typer.Option(False, "--batch", help="Submit through the vendors' batch engines (half price, "
                               "≤ 24 h); collect with: probe batch collect RUN_ID."),
) -> None:
    """Ask suites of questions and record each model's confidence, four ways."""
    if resume and not (suite or model or config):
        previous = find_run(open_store(db), resume)
        spec = validate_spec({k: v for k, v in previous.spec.items() if k != "fingerprint"}, f"run {resume}")
        if refresh:
            spec = spec.model_copy(update={"refresh": True})
    else:
        spec = _spec_from_flags(suite, model, source, variant, limit, samples, temperature, concurrency,
                                refresh, config)
    run_command(spec, db, json_out, resume, dry_run, batch)


def export(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl or csv."),
    output: Path | None = typer.Option(None, "-o", "--output", help="File to write (default: stdout)."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
) -> None:
    """Export a run's records, one line per record."""
    if fmt not in ("jsonl", "csv"):
        raise UsageError(f"--format must be jsonl or csv, not {fmt!r}")
    store = open_store(db)
    info = find_run(store, run_id)
    records = store.records(info.run_id)
    fields = ["run_id", "model", "provider", "suite", "item_id", "variant", "source", "sample", "answer",
              "correct", "confidence", "status", "error", "model_reported", "input_tokens", "output_tokens",
              "latency_s", "temperature", "option_mass", "outside_topk"]
    buf = io.StringIO()
    if fmt == "jsonl":
        for r in records:
            buf.write(r.model_dump_json() + "\n")
    else:
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in records:
            row = r.model_dump(mode="json")
            row["temperature"] = r.sampling.temperature
            row["option_mass"] = r.detail.option_mass
            row["outside_topk"] = r.detail.outside_topk
            w.writerow({k: row.get(k) for k in fields})
    if output is None:
        sys.stdout.write(buf.getvalue())
    else:
        write_text_atomic(output, buf.getvalue())
        err_console.print(f"wrote {len(records)} records to {output}")


DEMO_MODELS = ["sim/calibrated", "sim/overconfident", "sim/nologprobs"]


def demo(
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
) -> None:
    """Run the demo suite against three simulated models (offline, no keys) and report."""
    spec = validate_spec({"suites": ["demo"], "models": DEMO_MODELS, "concurrency": 64, "refresh": True}, "demo")
    info = run_command(spec, db, json_out, None, False, emit=not json_out)
    if info is None:
        return
    store = Store(db)
    records = store.records(info.run_id)
    rep = build_report(info, records)
    out = write_text_atomic(db.parent / "report.html", render_run_report(info, records, report=rep))
    pooled = [g for g in rep.groups if g.pooled]
    if json_out:
        print_json({**run_summary_json(info, summarize(records), store), "report": str(out),
                    "calibration": [g.model_dump(mode="json", include=set(CALIBRATION_FIELDS)) for g in pooled]})
        return
    console.print(_calibration_table(pooled))
    console.print(f"report: [bold]{out}[/bold]  (open it in a browser: reliability diagrams per model and source)")
    console.print(f"next: probe report {info.run_id} [--format json]  ·  probe compare {info.run_id} "
                  f"--models sim/calibrated,sim/overconfident")


CALIBRATION_FIELDS = ("model", "source", "n", "n_ok", "accuracy", "accuracy_ci", "ece", "ece_ci",
                      "ece_width_if_calibrated", "signed_ece", "auroc", "status_counts")


def _ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def _calibration_table(groups: list[GroupReport]) -> Table:
    """Calibration per model × source (variants pooled), with 95 % bootstrap intervals."""
    table = Table("model", "source", "scored", "accuracy", "ECE", "ECE if calibrated", "signed ECE", "AUROC",
                  Column("not scored (why)", no_wrap=True),
                  title="calibration, variants pooled (95 % bootstrap intervals; signed ECE > 0 = overconfident; "
                        "'ECE if calibrated' = what noise alone gives a calibrated model on this many records)")
    for g in groups:
        missing = ", ".join(f"{v} {k.removeprefix('unavailable:')}" for k, v in g.status_counts.items()
                            if k != "ok") or "-"
        table.add_row(g.model, g.source, f"{g.n_ok}/{g.n}", _ci(g.accuracy, g.accuracy_ci), _ci(g.ece, g.ece_ci),
                      _ci(g.ece_width_if_calibrated, None), _ci(g.signed_ece, None), _ci(g.auroc, None), missing)
    return table
