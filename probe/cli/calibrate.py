"""``probe calibrate``: fit a recalibration map on held-out protocol, apply it, check it on a newer run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import typer
from pydantic import ValidationError
from rich.table import Table

from probe.analysis import (
    METHODS,
    POOLED,
    Calibrator,
    FittedOn,
    HeldOutScores,
    Method,
    calibration_metrics,
    evaluate,
    scored_arrays,
    select_records,
)
from probe.analysis.recalibration import CALIBRATOR_FORMAT, CALIBRATOR_VERSION
from probe.cli._common import console, err_console, print_json
from probe.cli.report import load_run
from probe.errors import UsageError
from probe.fileio import write_text_atomic
from probe.record import Record
from probe.storage import DEFAULT_DB

app = typer.Typer(help="Fit, apply and check recalibration maps (scored on held-out data only).",
                  no_args_is_help=True)

_ROWS = (("accuracy", "accuracy"), ("ECE (width)", "ece"), ("ECE (mass)", "ece_mass"), ("MCE", "mce"),
         ("Brier", "brier"), ("NLL", "nll"), ("AUROC", "auroc"))


def _scores_table(title: str, before: HeldOutScores, after: HeldOutScores) -> Table:
    t = Table("metric", "before", "after", "change", title=title, title_justify="left")
    for label, key in _ROWS:
        b, a = getattr(before, key), getattr(after, key)
        change = "—" if a is None or b is None else f"{a - b:+.4f}"
        t.add_row(label, "—" if b is None else f"{b:.4f}", "—" if a is None else f"{a:.4f}", change)
    return t


def _group_arrays(records: list[Record], model: str, source: str, variant: str,
                  run_id: str) -> tuple[list[Record], np.ndarray, np.ndarray, list[str]]:
    chosen = select_records(records, model, source, variant)
    conf, correct, keys = scored_arrays(chosen)
    if conf.size == 0:
        have = sorted({(r.model, r.source, r.variant) for r in records if r.status == "ok"})
        listing = "; ".join(f"{m} / {s} / {v}" for m, s, v in have) or "none"
        raise UsageError(f"run {run_id} has no scored records for {model} / {source} / {variant} "
                         f"(groups with ok records: {listing})")
    items = [f"{suite}\0{item}" for suite, item, _ in keys]
    return chosen, conf, correct, items


def _param_summary(cal: Calibrator) -> str:
    p = cal.params
    if p.method == "temperature":
        return f"T = {p.temperature:.4f} (on {p.on})"
    if p.method == "platt":
        return f"p' = σ({p.a:.4f}·logit(p) {p.b:+.4f})"
    if p.method == "histogram":
        return f"{len(p.values)} bins"
    return f"{len(p.x)} knots"


@app.command("fit")
def fit_cmd(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    model: str = typer.Option(..., "--model", help="provider/model, as in the run."),
    source: str = typer.Option(..., "--source", help="Confidence source: token, ptrue, verbal, consistency."),
    variant: str = typer.Option(POOLED, "--variant", help="Prompt variant (default '*': all pooled)."),
    method: str = typer.Option(..., "--method", help="temperature, platt, histogram or isotonic."),
    split: float | None = typer.Option(None, "--split", help="Share of items to fit on (default 0.5)."),
    folds: int | None = typer.Option(None, "--folds", help="K-fold cross-fitting instead of one split."),
    output: Path = typer.Option(..., "-o", "--output", help="Calibrator JSON file to write."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split."),
    bins: int = typer.Option(10, "--bins", min=1, max=1000, help="Bins for ECE (and histogram binning)."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    json_out: bool = typer.Option(False, "--json", help="Print the calibrator (with held-out figures) as JSON."),
) -> None:
    """Fit a calibrator on part of a run and print before/after metrics on the held-out part only."""
    if method not in METHODS:
        raise UsageError(f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    if split is not None and folds is not None:
        raise UsageError("give either --split or --folds, not both")
    if split is not None and not 0.0 < split < 1.0:
        raise UsageError(f"--split must be between 0 and 1 (exclusive), not {split}")
    if folds is not None and folds < 2:
        raise UsageError(f"--folds must be at least 2, not {folds}")
    info, records = load_run(db, run_id)
    chosen, conf, correct, items = _group_arrays(records, model, source, variant, info.run_id)
    the_method: Method = next(m for m in METHODS if m == method)
    try:
        result = evaluate(the_method, conf, correct, fraction=None if folds is not None else (split or 0.5),
                          folds=folds, seed=seed, groups=np.asarray(items), bins=bins)
    except ValueError as e:
        raise UsageError(f"{model} / {source} / {variant}: {e}") from None
    cal = Calibrator(
        method=the_method, params=result.params, held_out=result,
        fitted_on=FittedOn(
            run_id=info.run_id, suites=sorted({r.suite for r in chosen}), model=model, source=source,
            variant=variant, n=result.n_fit, n_correct=result.n_fit_correct,
            protocol=result.protocol,
            sampling=sorted({r.sampling for r in chosen}, key=lambda s: s.model_dump_json()),
        ),
    )
    write_text_atomic(output, cal.model_dump_json(indent=2) + "\n")
    if json_out:
        print_json(cal.model_dump(mode="json"))
        return
    proto = result.protocol
    how = f"{proto.folds}-fold cross-fitting" if proto.kind == "folds" else f"split {proto.fraction:g}"
    console.print(f"{the_method} on {model} / {source} / {variant} (run {info.run_id}): {_param_summary(cal)}")
    console.print(f"{how}, seed {proto.seed}, items kept on one side; fitted on {result.n_fit} records, "
                  f"scored on {result.after.n} held-out records")
    console.print(_scores_table("held-out records only", result.before, result.after))
    console.print(result.note)
    err_console.print(f"wrote {output}")


def read_calibrator(path: Path) -> Calibrator:
    """Load a calibrator file; UsageError naming the file and field when it is not a valid one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    if not isinstance(data, dict) or data.get("format") != CALIBRATOR_FORMAT:
        raise UsageError(f"{path}: not a probe calibrator file (no \"format\": \"{CALIBRATOR_FORMAT}\")")
    if data.get("version") != CALIBRATOR_VERSION:
        raise UsageError(f"{path}: version: calibrator format version {data.get('version')!r} is not "
                         f"supported (this probe reads version {CALIBRATOR_VERSION})")
    try:
        return Calibrator.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise UsageError(f"{path}: {loc}: {first['msg']}") from None


def _parse_values(values: list[str]) -> np.ndarray:
    out: list[float] = []
    for i, v in enumerate(values, start=1):
        try:
            x = float(v)
        except ValueError:
            x = float("nan")
        if not 0.0 <= x <= 1.0:
            raise UsageError(f"value {i} ({v!r}) is not a confidence in [0, 1]")
        out.append(x)
    return np.asarray(out, dtype=np.float64)


@app.command("apply")
def apply_cmd(
    calibrator: Path = typer.Argument(..., help="Calibrator JSON written by `probe calibrate fit`."),
    values: list[str] = typer.Argument(..., help="Confidences in [0, 1]."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print calibrated values of the given confidences."""
    cal = read_calibrator(calibrator)
    raw = _parse_values(values)
    try:
        out = cal.apply(raw)
    except ValueError as e:
        raise UsageError(f"{calibrator}: {e}") from None
    if json_out:
        print_json([{"confidence": float(a), "calibrated": float(b)} for a, b in zip(raw, out, strict=True)])
        return
    for text, b in zip(values, out, strict=True):
        console.print(f"{text} → {b:.4f}")


@app.command("check")
def check_cmd(
    calibrator: Path = typer.Argument(..., help="Calibrator JSON written by `probe calibrate fit`."),
    run_id: str = typer.Argument(..., help="A newer run to score it on (id or unique prefix)."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    bins: int = typer.Option(10, "--bins", min=1, max=1000, help="Bins for ECE."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Score a saved calibrator on another run of the same model, source and variant."""
    cal = read_calibrator(calibrator)
    fo = cal.fitted_on
    info, records = load_run(db, run_id)
    if info.run_id == fo.run_id:
        raise UsageError(f"{calibrator} was fitted on run {fo.run_id}: scoring it there would be in-sample; "
                         "`probe calibrate fit` reports its held-out figures")
    chosen, conf, correct, _ = _group_arrays(records, fo.model, fo.source, fo.variant, info.run_id)
    try:
        after_conf = cal.apply(conf)
    except ValueError as e:
        raise UsageError(f"{calibrator}: {e}") from None
    before = HeldOutScores.of(calibration_metrics(conf, correct, bins))
    after = HeldOutScores.of(calibration_metrics(after_conf, correct, bins))
    warnings: list[str] = []
    sampling = {r.sampling for r in chosen}
    if fo.sampling and sampling != set(fo.sampling):
        warnings.append("the run's sampling parameters differ from those the calibrator was fitted on")
    if sorted({r.suite for r in chosen}) != sorted(fo.suites):
        warnings.append(f"suites differ: fitted on {', '.join(fo.suites)}, "
                        f"run has {', '.join(sorted({r.suite for r in chosen}))}")
    if json_out:
        print_json({"calibrator": str(calibrator), "run_id": info.run_id, "model": fo.model, "source": fo.source,
                    "variant": fo.variant, "before": before.model_dump(mode="json"),
                    "after": after.model_dump(mode="json"), "warnings": warnings})
        return
    console.print(f"{cal.method} calibrator fitted on run {fo.run_id} ({fo.n} records), scored on run "
                  f"{info.run_id}: {fo.model} / {fo.source} / {fo.variant}")
    console.print(_scores_table(f"run {info.run_id} (not seen when fitting)", before, after))
    for w in warnings:
        console.print(f"warning: {w}")
