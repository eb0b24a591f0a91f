"""The run report's HTML: structure, self-containment, unique ids, escaping, notes."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from probe.record import SOURCES
from probe.reports import (
    build_comparison,
    history_from_store,
    make_entries,
    render_comparison_html,
    render_history_html,
    render_run_report,
    write_html_report,
)
from probe.reports._notes import collapse_warnings, no_scores_note, partial_note
from probe.storage import Store

from ._page import parse
from ._synth import synthetic_run
from .conftest import DEMO_MODELS


@pytest.fixture(scope="module")
def report_a(synth_db: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    with Store(synth_db) as store:
        path = write_html_report(store, "rA", tmp_path_factory.mktemp("html") / "report.html", resamples=100)
    return path.read_text(encoding="utf-8")


def test_summary_diagrams_notes_and_manifest(report_a: str) -> None:
    doc = parse(report_a)
    rows = [r for r in doc.find("table", id="summary").find_all("tr") if "data-model" in r.attrs]
    assert [(r.attrs["data-model"], r.attrs["data-source"]) for r in rows] == \
        [(m, s) for m in DEMO_MODELS for s in SOURCES]
    calibrated_token = rows[0].find_all("td")
    assert calibrated_token[2].text.strip().endswith("/ 240")  # 80 items × 3 variants
    assert "[" in calibrated_token[3].text  # accuracy with its interval
    nolog_token = next(r for r in rows if r.attrs["data-model"] == "sim/nologprobs" and r.attrs["data-source"] == "token")
    cells = [c.text.strip() for c in nolog_token.find_all("td")]
    assert cells[2] == "0 / 240" and cells[3] == "–" and cells[9] == "240" and cells[10] == "0"
    assert "provider has no logprobs × 240" in cells[11]

    figures = doc.find_all("figure", "diagram")
    assert len(figures) == 10  # 3 models × 4 sources, minus nologprobs' token and ptrue
    for f in figures:
        svg = f.find("svg")
        assert "perfect calibration" in svg.text and "sparse bin (n < 30)" in svg.text and "n=30" in svg.text
        assert "confidence" in svg.text and "predictions" in svg.text  # the histogram under the curve
    titles = {f.attrs["data-title"] for f in figures}
    assert "sim/nologprobs · token" not in titles and "sim/nologprobs · verbal" in titles
    # one curve per variant plus the pooled one: the legend names them
    verbal = next(f for f in figures if f.attrs["data-title"] == "sim/calibrated · verbal")
    for label in ("all variants (n=", "plain:numeric (n=", "expert:linguistic (n=", "shuffled:numeric (n="):
        assert label in verbal.find("svg").text

    notes = doc.find_all("p", "unavailable")
    assert [(n.attrs["data-model"], n.attrs["data-source"], n.text) for n in notes] == [
        ("sim/nologprobs", "token", "token: unavailable — provider has no logprobs"),
        ("sim/nologprobs", "ptrue", "ptrue: unavailable — provider has no logprobs"),
    ]
    manifest = doc.find("dl", "manifest").text
    for expected in ("s1:demo0001", "calibrated-2025-01-01", "temperature=1.0", "top_logprobs=5",
                     "2025-03-01 12:00:00", "probe version (run)", "0.1.0", "B = 100"):
        assert expected in manifest
    by_variant = [r for r in doc.find("table", id="by-variant").find_all("tr") if "data-variant" in r.attrs]
    assert {r.attrs["data-variant"] for r in by_variant} >= {"plain", "expert", "shuffled", "plain:numeric"}


def test_self_contained_and_ids_unique(report_a: str) -> None:
    doc = parse(report_a)
    elements = doc.iter()
    assert not [e for e in elements if e.tag in ("script", "link", "img", "iframe", "object")]
    refs = [v for e in elements for k, v in e.attrs.items() if k in ("src", "href", "xlink:href")]
    assert refs and all(v.startswith("#") for v in refs), [v for v in refs if not v.startswith("#")]
    styles = [v for e in elements for k, v in e.attrs.items() if k == "style"] + \
        [e.text for e in elements if e.tag == "style"]
    assert not [s for s in styles if "url(http" in s or "@import" in s]
    ids = Counter(e.attrs["id"] for e in elements if "id" in e.attrs)
    assert [i for i, n in ids.items() if n > 1] == []
    # every url(#…) an SVG uses points at an id of the page
    used = {v[5:-1] for e in elements for k, v in e.attrs.items() if v.startswith("url(#")}
    assert used and used <= set(ids)


def test_special_characters_are_escaped(tmp_path: Path) -> None:
    model = "sim/<script>alert('m')</script>&\"q\"$x$"
    suite = "<img src=x onerror=alert(1)>&s"
    with Store(tmp_path / "p.db") as store:
        info = synthetic_run(store, "r<&>", models=[model], suite=suite, items=30, reported={model: "<b>id</b>"})
        html = render_run_report(info, store.records(info.run_id), resamples=50)
    assert "<script>" not in html and "<img" not in html and "<b>id</b>" not in html
    assert "&lt;script&gt;alert(" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    doc = parse(html)
    assert not doc.find_all("script") and not doc.find_all("img") and not doc.find_all("b")
    rows = [r for r in doc.find("table", id="summary").find_all("tr") if "data-model" in r.attrs]
    assert {r.attrs["data-model"] for r in rows} == {model}  # attribute values round-trip exactly
    assert rows[0].find_all("td")[0].text == model
    assert suite in doc.find("p", "sub").text and "r<&>" in doc.find("h1").text
    assert "<b>id</b>" in doc.find("dl", "manifest").text
    # the diagram titles keep the name as written ($x$ is not turned into mathtext)
    figures = doc.find_all("figure", "diagram")
    assert figures and all(f"{model} ·" in f.find("svg").text for f in figures)


def test_notes_text() -> None:
    assert no_scores_note("token", {"unavailable:provider_has_none": 10}) == \
        "token: unavailable — provider has no logprobs"
    assert no_scores_note("ptrue", {"unavailable:model_refused": 3, "unavailable:endpoint_dropped": 1}) == \
        "ptrue: unavailable — endpoint returned no logprobs; model refused logprobs"
    assert no_scores_note("verbal", {"error:rate_limit": 2, "parse_error": 5}) == \
        "verbal: no scored records — 5 parse_error, 2 error:rate_limit"
    assert no_scores_note("consistency", {}) == "consistency: no records"
    assert partial_note(100, {"ok": 97, "error:timeout": 3}) == "not scored: 3 of 100 records (error:timeout × 3)"
    assert partial_note(100, {"ok": 100}) is None
    merged = collapse_warnings(["a / t / x: differs", "b / t / x: differs", "the run is empty", "c / v / y: other"])
    assert merged == ["2 groups (a / t / x, b / t / x): differs", "the run is empty", "c / v / y: other"]


def test_unfinished_run_and_errors_only_source(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store:
        info = synthetic_run(store, "r1", models=["sim/calibrated"], items=30, sources=("token", "verbal"))
        info = info.model_copy(update={"status": "interrupted", "sources": ["token", "verbal", "consistency"]})
        html = render_run_report(info, store.records("r1"), resamples=50)
    doc = parse(html)
    assert "run is interrupted" in doc.find("div", "warn").text
    assert [n.text for n in doc.find_all("p", "unavailable")] == ["consistency: no records"]


def test_comparison_and_history_pages_escape_names(tmp_path: Path) -> None:
    a, b = "sim/<i>a</i>", "sim/b&<script>x</script>"
    suite = "<u>suite</u>"
    with Store(tmp_path / "p.db") as store:
        info = synthetic_run(store, "r1", models=[a, b], suite=suite, items=30, sources=("verbal",))
        synthetic_run(store, "r2", models=[a], suite=suite, items=30, sources=("verbal",), seed=1,
                      created_at=datetime(2025, 6, 1, tzinfo=UTC))
        entries, records, runs = make_entries([info], [store.records("r1")], [b, a])
        cmp_html = render_comparison_html(build_comparison(runs, entries, records, resamples=50))
        hist_html = render_history_html(history_from_store(store, suite=suite, model=a, resamples=50))
    for html in (cmp_html, hist_html):
        assert "<i>" not in html and "<script>" not in html and "<u>" not in html
        assert not parse(html).find_all("script")
    assert "sim/b&amp;&lt;script&gt;x&lt;/script&gt;" in cmp_html and "&lt;u&gt;suite&lt;/u&gt;" in hist_html
    assert f"{b} (n=" in parse(cmp_html).find("figure", "diagram").find("svg").text
