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
from probe.analysis.recalibration import (
    CALIBRATOR_FORMAT,
    CALIBRATOR_VERSION,
    HeldOutResult,
    TemperatureParams,
    apply_temperature_options,
    evaluate_options,
    option_confidence,
    option_inputs,
)
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
                  run_id: str) -> tuple[list[Record], list[Record], np.ndarray, np.ndarray, list[str]]:
    """The group's records, its scored records and their (conf, correct, suite+item) arrays, row-aligned."""
    chosen = select_records(records, model, source, variant)
    scored = [r for r in chosen if r.status == "ok" and r.confidence is not None and r.correct is not None]
    conf, correct, keys = scored_arrays(scored)
    if conf.size == 0:
        have = sorted({(r.model, r.source, r.variant) for r in records if r.status == "ok"})
        listing = "; ".join(f"{m} / {s} / {v}" for m, s, v in have) or "none"
        raise UsageError(f"run {run_id} has no scored records for {model} / {source} / {variant} "
                         f"(groups with ok records: {listing})")
    items = [f"{suite}\0{item}" for suite, item, _ in keys]
    return chosen, scored, conf, correct, items


def _param_summary(cal: Calibrator) -> str:
    p = cal.params
    if p.method == "temperature":
        return f"T = {p.temperature:.4f} (on {p.on})"
    if p.method == "platt":
        return f"p' = σ({p.a:.4f}·logit(p) {p.b:+.4f})"
    if p.method == "histogram":
        return f"{len(p.values)} bins"
    return f"{len(p.x)} knots"


def _fit_temperature(scored: list[Record], conf: np.ndarray, correct: np.ndarray, items: list[str], *,
                     fraction: float | None, folds: int | None, seed: int,
                     bins: int) -> tuple[HeldOutResult, str]:
    """Temperature on the option logits when every scored record has its full option distribution,
    else on logit(conf); the second value says which and why."""
    inputs = option_inputs(scored)
    if isinstance(inputs, str):
        result = evaluate("temperature", conf, correct, fraction=fraction, folds=folds, seed=seed,
                          groups=np.asarray(items), bins=bins)
        return result, f"temperature on logit(conf), not on the option logits: {inputs}"
    probs, label, answered = inputs
    result = evaluate_options(probs, label, answered, conf, correct, fraction=fraction, folds=folds, seed=seed,
                              groups=np.asarray(items), bins=bins)
    return result, (f"temperature on the option logits: all {len(scored)} scored records carry the full option "
                    "distribution; fitted to the correct option, scored on the answered option's probability")


@app.command("fit")
def fit_cmd(
    run_id: str = typer.Argument(..., help="Run id (or a unique prefix)."),
    model: str = typer.Option(..., "--model", help="provider/model, as in the run."),
    source: str = typer.Option(..., "--source", help="Confidence source: token, ptrue, verbal, consistency."),
    variant: str = typer.Option(POOLED, "--variant", help="Prompt variant (default '*': all pooled)."),
    method: str = typer.Option(..., "--method", help="temperature, platt, histogram or isotonic. temperature works "
                               "on the option logits when every scored record has its full option distribution "
                               "(token source, mc), else on logit(conf); the output says which and why."),
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
    chosen, scored, conf, correct, items = _group_arrays(records, model, source, variant, info.run_id)
    the_method: Method = next(m for m in METHODS if m == method)
    fraction = None if folds is not None else (split or 0.5)
    form_note: str | None = None
    try:
        if the_method == "temperature":
            result, form_note = _fit_temperature(scored, conf, correct, items,
                                                 fraction=fraction, folds=folds, seed=seed, bins=bins)
        else:
            result = evaluate(the_method, conf, correct, fraction=fraction, folds=folds, seed=seed,
                              groups=np.asarray(items), bins=bins)
    except ValueError as e:
        raise UsageError(f"{model} / {source} / {variant}: {e}") from None
    cal = Calibrator(
        method=the_method, params=result.params, held_out=result, form_note=form_note,
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
    if form_note:
        console.print(form_note)
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


def _option_temperature(cal: Calibrator) -> TemperatureParams | None:
    """The calibrator's temperature when it was fitted on the option logits, else None."""
    p = cal.params
    return p if isinstance(p, TemperatureParams) and p.on == "option_logits" else None


def _parse_distributions(path: Path, params: TemperatureParams, values: list[str]) -> list[tuple[float, ...]]:
    out: list[tuple[float, ...]] = []
    for i, v in enumerate(values, start=1):
        parts = v.split(",")
        if len(parts) < 2:
            raise UsageError(
                f"{path}: this temperature (T = {params.temperature:.4f}) was fitted on the option logits and acts "
                f"on the whole option distribution; value {i} ({v!r}) is a bare confidence, which does not say "
                "how the other options share the rest. Give each value as the options' probabilities separated "
                "by commas (e.g. 0.7,0.2,0.1), or score the calibrator on a run with `probe calibrate check`")
        try:
            row = tuple(float(x) for x in parts)
        except ValueError:
            row = (float("nan"),)
        if not all(0.0 <= x <= 1.0 for x in row):
            raise UsageError(f"value {i} ({v!r}) is not a list of option probabilities in [0, 1]")
        if sum(row) <= 0.0:
            raise UsageError(f"value {i} ({v!r}) puts no probability on any option")
        out.append(row)
    return out


def _fmt_row(row: np.ndarray | tuple[float, ...]) -> str:
    return ",".join(f"{x:.4f}" for x in row)


@app.command("apply")
def apply_cmd(
    calibrator: Path = typer.Argument(..., help="Calibrator JSON written by `probe calibrate fit`."),
    values: list[str] = typer.Argument(..., help="Confidences in [0, 1]; for a temperature fitted on the option "
                                       "logits, option distributions written as comma-separated "
                                       "probabilities (0.7,0.2,0.1)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print calibrated values of the given confidences.

    A temperature fitted on the option logits ("on": "option_logits" in
    the file) maps an option distribution p to softmax(log p / T), so it
    needs every option's probability: give each value as comma-separated
    option probabilities (0.7,0.2,0.1); it prints the recalibrated
    distribution (the most likely option stays the most likely).
    A bare confidence is refused (exit code 2) rather than passed through
    σ(logit(p) / T) with the same T: with more than two options that is a
    different map from the one that was fitted and scored.
    """
    cal = read_calibrator(calibrator)
    opt = _option_temperature(cal)
    if opt is not None:
        rows = _parse_distributions(calibrator, opt, values)
        cal_rows = [apply_temperature_options(np.asarray([r]), opt)[0] for r in rows]
        if json_out:
            print_json([{"options": [x / sum(r) for x in r], "calibrated": [float(x) for x in c]}
                        for r, c in zip(rows, cal_rows, strict=True)])
            return
        for r, c in zip(rows, cal_rows, strict=True):
            console.print(f"{_fmt_row(tuple(x / sum(r) for x in r))} → {_fmt_row(c)}")
        return
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
    """Score a saved calibrator on another run of the same model, source and variant.

    A temperature fitted on the option logits is applied to each record's
    option distribution (the run must have them all) and scored on the
    answered option's recalibrated probability; any other calibrator is
    applied to the records' confidences.
    """
    cal = read_calibrator(calibrator)
    fo = cal.fitted_on
    info, records = load_run(db, run_id)
    if info.run_id == fo.run_id:
        raise UsageError(f"{calibrator} was fitted on run {fo.run_id}: scoring it there would be in-sample; "
                         "`probe calibrate fit` reports its held-out figures")
    chosen, scored, conf, correct, _ = _group_arrays(records, fo.model, fo.source, fo.variant, info.run_id)
    opt = _option_temperature(cal)
    try:
        if opt is not None:
            inputs = option_inputs(scored)
            if isinstance(inputs, str):
                raise UsageError(f"{calibrator}: this temperature was fitted on the option logits and needs every "
                                 f"record's option distribution; in run {info.run_id} {inputs}")
            probs, _, answered = inputs
            after_conf = option_confidence(probs, answered, opt)
        else:
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
                    "variant": fo.variant, "method": cal.method, "params": cal.params.model_dump(mode="json"),
                    "before": before.model_dump(mode="json"),
                    "after": after.model_dump(mode="json"), "warnings": warnings})
        return
    console.print(f"{cal.method} calibrator ({_param_summary(cal)}) fitted on run {fo.run_id} ({fo.n} records), "
                  f"scored on run {info.run_id}: {fo.model} / {fo.source} / {fo.variant}")
    console.print(_scores_table(f"run {info.run_id} (not seen when fitting)", before, after))
    for w in warnings:
        console.print(f"warning: {w}")
