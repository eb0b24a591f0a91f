"""probe compare, probe history, probe plot and probe report --format html on synthetic runs in SQLite."""

from __future__ import annotations

import json
from pathlib import Path

from ._page import parse
from .conftest import Cli

FAST = ("--resamples", "200")


def test_report_html_to_file(cli: Cli, synth_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli("report", "rB", "--db", str(synth_db), "--format", "html", "-o", str(out), *FAST)
    assert code == 0 and "wrote" in err
    doc = parse(out.read_text(encoding="utf-8"))
    assert len(doc.find_all("figure", "diagram")) == 8  # 2 models × 4 sources


def _row(data: dict, source: str, variant: str = "*") -> dict:  # type: ignore[type-arg]
    return next(r for r in data["rows"] if r["source"] == source and r["variant"] == variant)


def _diff(row: dict, metric: str) -> dict:  # type: ignore[type-arg]
    return next(d["result"] for d in row["differences"] if d["result"]["metric"] == metric)


def test_compare_models_in_one_run(cli: Cli, synth_db: Path) -> None:
    code, out, _ = cli("compare", "rA", "--models", "sim/overconfident,sim/calibrated", "--json", "--db",
                       str(synth_db), *FAST)
    assert code == 0
    data = json.loads(out)
    assert [e["label"] for e in data["entries"]] == ["sim/overconfident", "sim/calibrated"]
    assert data["warnings"] == []  # same run, same sampling
    token = _row(data, "token")
    assert (token["items"] == 80 and [e["n"] for e in token["entries"]] == [237, 237]) or token["items"] == 80
    over, cal = token["entries"]
    assert over["ece"] > cal["ece"] and over["signed_ece"] > 0.1  # the overconfident persona is overconfident
    ece = _diff(token, "ece")  # calibrated − overconfident
    assert ece["difference"] < 0 and ece["ci"][1] < 0 and ece["p_value"] < 0.05
    assert ece["items"] == 80
    assert {r["variant"] for r in data["rows"] if r["source"] == "verbal"} >= {"*", "plain:numeric", "expert:linguistic"}


def test_compare_runs_warns_on_sampling_and_model_ids(cli: Cli, synth_db: Path, tmp_path: Path) -> None:
    code, out, _ = cli("compare", "rB", "rC", "--models", "sim/calibrated", "--json", "--db", str(synth_db), *FAST)
    assert code == 0
    data = json.loads(out)
    assert [e["label"] for e in data["entries"]] == ["sim/calibrated @ rB", "sim/calibrated @ rC"]
    assert any("sampling parameters differ" in w and "temperature=0.7" in w for w in data["warnings"])
    assert any("different model ids" in w and "calibrated-2025-05-01" in w for w in data["warnings"])
    acc = _diff(_row(data, "token"), "accuracy")
    assert acc["difference"] < -0.1 and acc["ci"][1] < 0  # rC's calibrated model got worse

    page = tmp_path / "cmp.html"
    code, _, _ = cli("compare", "rB", "rC", "--models", "sim/calibrated", "--format", "html", "-o", str(page),
                     "--db", str(synth_db), *FAST)
    assert code == 0
    doc = parse(page.read_text(encoding="utf-8"))
    assert any("sampling parameters differ" in w.text for w in doc.find_all("div", "warn"))
    assert len(doc.find_all("figure", "diagram")) == 4  # overlaid curves, one per source
    legend = doc.find_all("figure", "diagram")[0].find("svg").text
    assert "sim/calibrated @ rB (n=" in legend and "sim/calibrated @ rC (n=" in legend
    assert doc.find_all("table", "differences")

    code, out, _ = cli("compare", "rB", "rC", "--models", "sim/calibrated", "--db", str(synth_db), *FAST)
    assert code == 0 and "WARNING: sampling parameters differ" in out and "paired differences" in out


def test_compare_with_a_model_without_logprobs(cli: Cli, synth_db: Path) -> None:
    code, out, _ = cli("compare", "rA", "--models", "sim/calibrated,sim/nologprobs", "--json", "--db",
                       str(synth_db), *FAST)
    assert code == 0
    data = json.loads(out)
    token = _row(data, "token")
    assert token["items"] == 0 and token["differences"] == []
    assert token["notes"] == ["sim/nologprobs: token: unavailable — provider has no logprobs"]
    assert [r["variant"] for r in data["rows"] if r["source"] == "token"] == ["*"]
    assert _row(data, "verbal")["items"] == 80


def test_compare_usage_errors(cli: Cli, synth_db: Path) -> None:
    code, _, err = cli("compare", "rA", "--models", "sim/calibrated", "--db", str(synth_db))
    assert code == 2 and "nothing to compare" in err
    code, _, err = cli("compare", "rA", "--models", "sim/calibrated,sim/nope", "--db", str(synth_db))
    assert code == 2 and "sim/nope" in err and "sim/overconfident" in err
    code, _, err = cli("compare", "rZ", "rA", "--db", str(synth_db))
    assert code == 2 and "rZ" in err
    code, _, err = cli("compare", "rA", "--format", "pdf", "--db", str(synth_db))
    assert code == 2 and "--format" in err


def test_history_flags_drift_and_model_change(cli: Cli, synth_db: Path) -> None:
    code, out, _ = cli("history", "--suite", "demo", "--model", "sim/calibrated", "--source", "token,verbal",
                       "--json", "--db", str(synth_db), *FAST)
    assert code == 0
    data = json.loads(out)
    assert data["fingerprint"] == "s1:demo0001" and data["skipped"] == ["rOld (s1:older)"]
    assert [s["source"] for s in data["sources"]] == ["token", "verbal"]
    token = data["sources"][0]
    assert [p["run_id"] for p in token["points"]] == ["rA", "rB", "rC"]
    assert [p["reported_ids"] for p in token["points"]][-1] == ["calibrated-2025-05-01"]
    last = token["steps"][-1]
    assert (last["previous_run_id"], last["run_id"]) == ("rB", "rC")
    assert last["drift"] and last["model_id_changed"] and last["sampling_changed"]
    acc = next(c for c in last["changes"] if c["metric"] == "accuracy")
    assert acc["drift"] and acc["result"]["difference"] < -0.1 and acc["result"]["ci"][1] < 0
    assert all(p["metrics"]["accuracy_ci"] and p["metrics"]["ece_ci"] for p in token["points"])
    assert any("different model id in rC" in w for w in data["warnings"])

    code, out, _ = cli("history", "--suite", "demo", "--model", "sim/calibrated", "--source", "token",
                       "--db", str(synth_db), *FAST)
    assert code == 0 and "DRIFT" in out and "(CHANGED)" in out and "calibrated-2025-05-01" in out


def test_history_html_and_other_versions(cli: Cli, synth_db: Path, tmp_path: Path) -> None:
    page = tmp_path / "h.html"
    code, _, _ = cli("history", "--suite", "demo", "--model", "sim/calibrated", "--source", "token",
                     "--format", "html", "-o", str(page), "--db", str(synth_db), *FAST)
    assert code == 0
    doc = parse(page.read_text(encoding="utf-8"))
    assert len(doc.find_all("figure", "diagram")) == 1
    svg = doc.find("figure", "diagram").find("svg").text
    assert "changed beyond the intervals" in svg and "reported model id changed" in svg
    assert doc.find_all("tr", "drift-row") and "changed" in doc.find("table", "history").text

    code, out, _ = cli("history", "--suite", "demo", "--model", "sim/calibrated", "--fingerprint", "s1:old",
                       "--json", "--db", str(synth_db), *FAST)
    assert code == 0
    data = json.loads(out)
    assert [p["run_id"] for p in data["sources"][0]["points"]] == ["rOld"]
    assert "only one run: nothing to compare it with yet" in data["warnings"]


def test_history_usage_errors(cli: Cli, synth_db: Path) -> None:
    code, _, err = cli("history", "--suite", "demo", "--model", "sim/nope", "--db", str(synth_db))
    assert code == 2 and "no run of suite 'demo' with model 'sim/nope'" in err
    code, _, err = cli("history", "--suite", "demo", "--model", "sim/calibrated", "--source", "vibes",
                       "--db", str(synth_db))
    assert code == 2 and "vibes" in err
    code, _, err = cli("history", "--suite", "demo", "--model", "sim/calibrated", "--db", str(synth_db / "x"))
    assert code == 2 and "no database" in err


def test_plot_png_and_svg(cli: Cli, synth_db: Path, tmp_path: Path) -> None:
    png = tmp_path / "fig.png"
    code, _, err = cli("plot", "rA", "--model", "sim/overconfident", "--source", "token", "-o", str(png),
                       "--db", str(synth_db))
    assert code == 0 and str(png) in err
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 500 and height > 500
    svg = tmp_path / "fig.svg"
    code, _, _ = cli("plot", "rA", "--model", "sim/calibrated", "--source", "verbal", "--variant", "plain:numeric",
                     "-o", str(svg), "--db", str(synth_db))
    assert code == 0
    text = svg.read_text(encoding="utf-8")
    assert text.startswith("<svg") and "plain:numeric (n=" in text and "expert:numeric" not in text


def test_plot_errors(cli: Cli, synth_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    code, _, err = cli("plot", "rA", "--model", "sim/nologprobs", "--source", "token", "-o", str(out),
                       "--db", str(synth_db))
    assert code == 1 and "token: unavailable — provider has no logprobs" in err and not out.exists()
    code, _, err = cli("plot", "rA", "--model", "sim/nope", "--source", "token", "-o", str(out), "--db", str(synth_db))
    assert code == 2 and "sim/nope" in err
    code, _, err = cli("plot", "rA", "--model", "sim/calibrated", "--source", "token", "-o", str(tmp_path / "x.gif"),
                       "--db", str(synth_db))
    assert code == 2 and ".png or .svg" in err
