"""``probe providers check`` and ``probe run`` end to end against the real llama.cpp server.

The CLI runs as a subprocess (as a user would run it); records are then read from its SQLite file
and checked against direct HTTP calls to the same server.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from probe.prompts import answer_prompt
from probe.record import Record
from probe.storage import Store
from probe.suite_io import resolve_suite
from tests.realserver._wire import MODEL, post, raw_rows
from tests.realserver.server import LlamaServer

pytestmark = pytest.mark.realserver

ROOT = Path(__file__).resolve().parents[2]
SUITE = "capitals"
LIMIT = 6


def _env(tmp: Path, base_url: str, key: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMACPP_")}
    env.update({"LLAMACPP_BASE_URL": base_url, "PROBE_CACHE_DIR": str(tmp / "cache"), "NO_COLOR": "1"})
    if key is not None:
        env["LLAMACPP_API_KEY"] = key
    return env


def _probe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "probe", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240)


@dataclass(frozen=True)
class RunOutput:
    summary: dict[str, Any]
    records: list[Record]
    db: Path
    requests: int


def _run(tmp: Path, server: LlamaServer, sources: str, key: str | None = None) -> RunOutput:
    db = tmp / "probe.db"
    before = server.requests_seen()
    done = _probe(["run", "-s", SUITE, "-m", f"llamacpp/{MODEL}", "--source", sources, "--limit", str(LIMIT),
                   "--db", str(db), "--json"], _env(tmp, server.base_url, key))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    return RunOutput(summary, Store(db).records(summary["run_id"]), db, server.requests_seen() - before)


def _failed_run(tmp: Path, server: LlamaServer, sources: str, key: str) -> tuple[RunOutput, str]:
    """A run that stops on an auth failure: exit 1, the run marked failed, its records kept."""
    db = tmp / "probe.db"
    before = server.requests_seen()
    done = _probe(["run", "-s", SUITE, "-m", f"llamacpp/{MODEL}", "--source", sources, "--limit", str(LIMIT),
                   "--db", str(db), "--json"], _env(tmp, server.base_url, key))
    assert done.returncode == 1, done.stdout + done.stderr
    (info,) = Store(db).list_runs()
    assert info.status == "failed"
    summary = {"run_id": info.run_id, "status": info.status}
    return RunOutput(summary, Store(db).records(info.run_id), db, server.requests_seen() - before), done.stderr


@pytest.fixture(scope="module")
def run(llama_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> RunOutput:
    """One run of token, ptrue and verbal on the first questions of a bundled suite."""
    return _run(tmp_path_factory.mktemp("run"), llama_server, "token,ptrue,verbal")


def test_providers_check_reports_logprobs_available(llama_server: LlamaServer, tmp_path: Path) -> None:
    done = _probe(["providers", "check", f"llamacpp/{MODEL}", "--json", "--refresh",
                   "--cache", str(tmp_path / "caps.json")], _env(tmp_path, llama_server.base_url))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["error"] is None
    assert report["logprobs"] is True
    assert report["logprob_state"] == "available"
    assert report["top_k_returned"] == report["top_k_requested"] >= 1
    assert report["top_k_honoured"] is True
    assert report["n_supported"] is False  # llama-cpp-python ignores n
    assert report["model_reported"] == MODEL
    listed = _probe(["providers", "list", "--json"], _env(tmp_path, llama_server.base_url))
    cap = next(p for p in json.loads(listed.stdout) if p["name"] == "llamacpp")["max_top_logprobs"]
    # the cap probe uses is one the server really honours (it returns up to 25 and more)
    body = {"model": MODEL, "messages": [{"role": "user", "content": "A or B?"}], "max_tokens": 1,
            "temperature": 0, "logprobs": True, "top_logprobs": cap}
    (_, _, alts), = raw_rows(post(llama_server.base_url + "/chat/completions", body).json())
    assert len(alts) == cap


def test_the_run_records_every_planned_call(run: RunOutput) -> None:
    assert run.summary["status"] == "completed"
    by_source: dict[str, int] = {}
    for r in run.records:
        by_source[r.source] = by_source.get(r.source, 0) + 1
        assert r.model == f"llamacpp/{MODEL}" and r.model_reported == MODEL
        assert not r.status.startswith("error:"), r.error
    n_variants = len(resolve_suite(SUITE).variants)
    assert by_source["token"] == LIMIT * n_variants
    assert set(by_source) == {"token", "ptrue", "verbal"}
    assert run.requests >= len(run.records)  # every record came from the server


def _label_masses(alts: tuple[tuple[str, float | None], ...], labels: tuple[str, ...]) -> dict[str, float]:
    mass = dict.fromkeys(labels, 0.0)
    for token, logprob in alts:
        key = token.strip().upper()
        if key in mass and logprob is not None:
            mass[key] += math.exp(logprob)
    return mass


def test_token_confidences_are_the_servers_renormalized_label_probabilities(
    run: RunOutput, llama_server: LlamaServer
) -> None:
    suite = resolve_suite(SUITE)
    questions = {q.id: q for q in suite.questions}
    variants = {v.id: v for v in suite.variants}
    token_records = [r for r in run.records if r.source == "token"]
    assert token_records and all(r.status == "ok" for r in token_records)
    for rec in token_records:
        question, variant = questions[rec.item_id], variants[rec.variant]
        prompt = answer_prompt(question, variant)
        body = {
            "model": MODEL,
            "messages": [m.model_dump() for m in prompt.messages],
            "max_tokens": rec.sampling.max_tokens,
            "temperature": rec.sampling.temperature,
            "logprobs": True,
            "top_logprobs": rec.sampling.top_logprobs,
        }
        rows = raw_rows(post(llama_server.base_url + "/chat/completions", body).json())
        position = next(i for i, (tok, _, _) in enumerate(rows) if tok.strip() in prompt.labels)
        token, _, alts = rows[position]
        mass = _label_masses(alts, prompt.labels)
        total = sum(mass.values())
        assert rec.answer == token.strip()
        assert rec.confidence == pytest.approx(mass[token.strip()] / total, rel=1e-5)
        assert rec.detail.option_mass == pytest.approx(min(total, 1.0), rel=1e-5)
        assert rec.correct == (prompt.choice_of_label(token.strip()) == question.answer)


def test_ptrue_records_carry_probabilities(run: RunOutput) -> None:
    ptrue = [r for r in run.records if r.source == "ptrue"]
    assert ptrue
    for rec in ptrue:
        assert rec.status == "ok", rec.status
        assert rec.confidence is not None and 0.0 < rec.confidence < 1.0


def test_verbal_parse_failures_are_counted_not_scored(run: RunOutput) -> None:
    verbal = [r for r in run.records if r.source == "verbal"]
    assert verbal
    failures = [r for r in verbal if r.status == "parse_error"]
    assert failures, "the random model should babble instead of stating a confidence"
    assert all(r.confidence is None for r in failures)
    line = next(s for s in run.summary["summary"] if s["source"] == "verbal")
    assert line["records"] == len(verbal)
    assert line["statuses"].get("parse_error", 0) == len(failures)
    assert line["ok"] == len(verbal) - len(failures)


def test_report_reads_the_run(run: RunOutput, tmp_path: Path, llama_server: LlamaServer) -> None:
    done = _probe(["report", run.summary["run_id"], "--db", str(run.db), "--format", "json", "--resamples", "50"],
                  _env(tmp_path, llama_server.base_url))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    sources = {g["source"] for g in report["groups"]}
    assert {"token", "ptrue"} <= sources


def test_a_wrong_key_is_recorded_as_auth_errors_without_the_key(
    llama_auth_server: LlamaServer, auth_key: str, tmp_path: Path
) -> None:
    wrong = "sk-realserver-wrong-" + "7" * 16
    out, stderr = _failed_run(tmp_path, llama_auth_server, "token", key=wrong)
    # an auth failure stops the run at once (every further call would fail too) and names the variable
    assert "LLAMACPP_API_KEY" in stderr and wrong not in stderr and auth_key not in stderr
    assert all(r.status == "error:auth" for r in out.records)
    for rec in out.records:
        assert rec.error is not None and "Invalid API key" in rec.error
        assert wrong not in rec.error and auth_key not in rec.error
        assert rec.confidence is None and rec.answer is None
    for fmt in ("json", "table"):
        done = _probe(["report", out.summary["run_id"], "--db", str(out.db), "--format", fmt, "--resamples", "50"],
                      _env(tmp_path, llama_auth_server.base_url, wrong))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "error:auth" in done.stdout
        assert wrong not in done.stdout + done.stderr
    (tmp_path / "ok").mkdir()
    right = _run(tmp_path / "ok", llama_auth_server, "token", key=auth_key)
    assert right.records and all(r.status == "ok" for r in right.records)
