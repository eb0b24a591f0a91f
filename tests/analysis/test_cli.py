"""probe report and probe calibrate against a real SQLite database written through probe.storage.Store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from probe.record import Record
from probe.storage import RunInfo

from .conftest import MODEL, Cli, make_record, overconfident_records, run_info


@pytest.fixture
def db(store_factory: Callable[[RunInfo, list[Record]], Path],
       overconfident_run: tuple[RunInfo, list[Record]]) -> Path:
    info, records = overconfident_run
    all_right = [make_record(info.run_id, i, 0.9, True, source="ptrue") for i in range(5)]
    store_factory(info, records + all_right)
    return store_factory(run_info("over-2"), overconfident_records("over-2", 800, seed=2, variants=("plain",)))


def test_report_table(cli: Cli, db: Path) -> None:
    code, out, _ = cli("report", "over-1", "--db", str(db), "--resamples", "100")
    assert code == 0
    assert "run over-1" in out and MODEL in out and "expert" in out
    assert "error:rate_limit" in out  # failures are listed, not scored
    assert "—" in out  # ptrue: AUROC undefined when every answer is right


def test_report_json_and_output_file(cli: Cli, db: Path, tmp_path: Path) -> None:
    code, out, _ = cli("report", "over-1", "--db", str(db), "--format", "json", "--resamples", "100",
                       "--bins", "5", "--binning", "mass")
    assert code == 0
    data = json.loads(out)
    assert data["run_id"] == "over-1" and data["bins"] == 5 and data["binning"] == "mass"
    ptrue = next(g for g in data["groups"] if g["source"] == "ptrue" and g["variant"] == "plain")
    assert ptrue["auroc"] is None and ptrue["auroc_ci"] is None and ptrue["accuracy"] == 1.0
    token = next(g for g in data["groups"] if g["source"] == "token" and g["variant"] == "*")
    assert token["ece"] == token["ece_mass"] and len(token["bins_mass"]) == 5
    target = tmp_path / "r.json"
    code, out, err = cli("report", "over", "--db", str(db), "--format", "json", "-o", str(target),
                         "--resamples", "100")
    assert code == 2 and "ambiguous" in err  # 'over' is a prefix of two runs
    code, out, err = cli("report", "over-1", "--db", str(db), "--format", "json", "-o", str(target),
                         "--resamples", "100")
    assert code == 0 and out == "" and json.loads(target.read_text())["run_id"] == "over-1"


@pytest.mark.parametrize(("args", "message"), [
    (["report", "nope"], "no run 'nope'"),
    (["report", "over-1", "--format", "xml"], "--format must be one of"),
    (["report", "over-1", "--binning", "log"], "--binning must be width or mass"),
])
def test_report_user_errors_exit_2(cli: Cli, db: Path, args: list[str], message: str) -> None:
    code, _, err = cli(*args, "--db", str(db))
    assert code == 2 and message in err and "Traceback" not in err


def test_report_html_goes_through_the_same_analysis(cli: Cli, db: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    code, _, _ = cli("report", "over-1", "--db", str(db), "--format", "html", "-o", str(target),
                     "--resamples", "50")
    assert code == 0 and "<html" in target.read_text(encoding="utf-8").lower()


def test_report_missing_database(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("report", "x", "--db", str(tmp_path / "none.db"))
    assert code == 2 and "no database" in err
    assert not (tmp_path / "none.db").exists()


def test_calibrate_fit_apply_check(cli: Cli, db: Path, tmp_path: Path,
                                   overconfident_run: tuple[RunInfo, list[Record]]) -> None:
    cal = tmp_path / "cal.json"
    code, out, _ = cli("calibrate", "fit", "over-1", "--model", MODEL, "--source", "token", "--method",
                       "temperature", "-o", str(cal), "--db", str(db))
    assert code == 0 and "held-out" in out and "ECE (width)" in out
    data = json.loads(cal.read_text())
    assert data["format"] == "probe-calibrator" and data["version"] == 1 and data["method"] == "temperature"
    fo = data["fitted_on"]
    assert (fo["run_id"], fo["model"], fo["source"], fo["variant"]) == ("over-1", MODEL, "token", "*")
    assert fo["protocol"]["kind"] == "split" and fo["protocol"]["fraction"] == 0.5
    held = data["held_out"]
    assert held["after"]["ece"] < held["before"]["ece"] and held["before"]["n"] == held["after"]["n"]
    scored = sum(r.status == "ok" for r in overconfident_run[1])
    assert fo["n"] + held["after"]["n"] == scored  # fitted part and held-out part are disjoint
    t = data["params"]["temperature"]
    assert t > 1.5  # overconfident → softened

    code, out, _ = cli("calibrate", "apply", str(cal), "0.93", "0.41", "--json")
    assert code == 0
    vals = json.loads(out)
    assert [v["confidence"] for v in vals] == [0.93, 0.41] and vals[0]["calibrated"] < 0.93

    code, out, _ = cli("calibrate", "check", str(cal), "over-2", "--db", str(db), "--json")
    assert code == 0
    checked = json.loads(out)
    assert checked["run_id"] == "over-2" and checked["after"]["ece"] < checked["before"]["ece"]

    code, _, err = cli("calibrate", "check", str(cal), "over-1", "--db", str(db))
    assert code == 2 and "in-sample" in err


def test_calibrate_folds_and_variant(cli: Cli, db: Path, tmp_path: Path) -> None:
    cal = tmp_path / "iso.json"
    code, out, _ = cli("calibrate", "fit", "over-1", "--model", MODEL, "--source", "token", "--variant", "plain",
                       "--method", "isotonic", "--folds", "4", "-o", str(cal), "--db", str(db))
    assert code == 0 and "4-fold" in out
    fo = json.loads(cal.read_text())["fitted_on"]
    assert fo["variant"] == "plain" and fo["protocol"] == {"kind": "folds", "fraction": None, "folds": 4,
                                                           "seed": 0, "by_item": True}


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "magic"], "--method must be one of"),
    (["--method", "platt", "--split", "0.5", "--folds", "3"], "either --split or --folds"),
    (["--method", "platt", "--split", "1.5"], "--split must be between 0 and 1"),
    (["--method", "platt", "--source", "verbal"], "no scored records"),
])
def test_calibrate_fit_user_errors(cli: Cli, db: Path, tmp_path: Path, args: list[str], message: str) -> None:
    base = ["calibrate", "fit", "over-1", "--model", MODEL, "-o", str(tmp_path / "c.json"), "--db", str(db)]
    if "--source" not in args:
        base += ["--source", "token"]
    code, _, err = cli(*base, *args)
    assert code == 2 and message in err


def test_calibrate_apply_user_errors(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli("calibrate", "apply", str(bad), "0.5")
    assert code == 2 and "bad.json:1: not valid JSON" in err
    bad.write_text(json.dumps({"format": "probe-calibrator", "version": 9}))
    code, _, err = cli("calibrate", "apply", str(bad), "0.5")
    assert code == 2 and "version 9 is not supported" in err
    bad.write_text(json.dumps({"format": "probe-calibrator", "version": 1, "method": "platt",
                               "params": {"method": "platt", "a": -1, "b": 0}}))
    code, _, err = cli("calibrate", "apply", str(bad), "0.5")
    assert code == 2 and "params.platt.a" in err
    code, _, err = cli("calibrate", "apply", str(tmp_path / "missing.json"), "0.5")
    assert code == 2 and "cannot read" in err


def test_calibrate_apply_rejects_bad_values(cli: Cli, db: Path, tmp_path: Path) -> None:
    cal = tmp_path / "h.json"
    code, _, _ = cli("calibrate", "fit", "over-1", "--model", MODEL, "--source", "token", "--method", "histogram",
                     "-o", str(cal), "--db", str(db))
    assert code == 0
    code, out, _ = cli("calibrate", "apply", str(cal), "0", "1", "0.5")
    assert code == 0 and out.count("→") == 3
    for bad in ("abc", "1.01", "nan"):
        code, _, err = cli("calibrate", "apply", str(cal), "0.5", bad)
        assert code == 2 and f"value 2 ({bad!r})" in err


def test_unwritable_output_is_a_user_error(cli: Cli, db: Path, tmp_path: Path) -> None:
    created = tmp_path / "new-dir" / "out.json"  # a missing directory is created
    code, _, _ = cli("report", "over-1", "--db", str(db), "--format", "json", "--resamples", "20",
                     "-o", str(created))
    assert code == 0 and created.is_file()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    target = blocker / "out.json"  # a directory that cannot exist: its parent is a file
    code, _, err = cli("report", "over-1", "--db", str(db), "--format", "json", "--resamples", "20",
                       "-o", str(target))
    assert code == 2 and "cannot write" in err
    code, _, err = cli("calibrate", "fit", "over-1", "--model", MODEL, "--source", "token", "--method", "platt",
                       "-o", str(target), "--db", str(db))
    assert code == 2 and "cannot write" in err
