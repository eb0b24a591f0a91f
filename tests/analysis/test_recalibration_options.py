"""Temperature scaling on the option logits: the fit on synthetic overconfident option distributions,
which records feed it, and `probe calibrate` on a real simulator run (runner → HTTP → simulator →
SQLite) that stores every record's option distribution."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from probe.analysis.recalibration import (
    OptionRows,
    TemperatureParams,
    apply_temperature_options,
    evaluate,
    evaluate_options,
    fit_temperature_options,
    option_confidence,
    option_inputs,
)
from probe.prompts import answer_prompt
from probe.record import ConfidenceDetail, Record
from probe.runner.run import close_providers, execute, make_plan, new_run, open_providers
from probe.runner.spec import RunSpec
from probe.sim import running_sim
from probe.storage import RunInfo, Store
from probe.suite_io import resolve_suite
from providers import RetryPolicy

from .conftest import Cli, make_record, overconfident_records, run_info

MODEL = "sim/overconfident"


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def overconfident_options(n: int, seed: int, k: int = 4, sharpen: float = 2.5) -> dict[str, np.ndarray]:
    """True option distribution q = softmax(z), the correct option drawn from q; the model reports
    p = softmax(sharpen · z) and answers its most probable option."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.0, (n, k))
    q = softmax(z)
    label = (rng.random((n, 1)) > np.cumsum(q, axis=1)).sum(axis=1)
    p = softmax(sharpen * z)
    answered = p.argmax(axis=1)
    return {"p": p, "label": label, "answered": answered, "conf": p[np.arange(n), answered],
            "correct": (answered == label).astype(float)}


def test_option_temperature_lowers_held_out_ece_and_never_changes_the_argmax() -> None:
    d = overconfident_options(6000, seed=3)
    r = evaluate_options(d["p"].tolist(), d["label"], d["answered"], d["conf"], d["correct"], seed=1)
    assert r.params.method == "temperature" and r.params.on == "option_logits"
    assert r.params.temperature == pytest.approx(2.5, rel=0.1)  # the sharpening, recovered on half the data
    assert r.before.ece > 0.1  # overconfident
    assert r.after.ece < 0.4 * r.before.ece
    assert r.after.brier < r.before.brier and r.after.nll < r.before.nll
    assert r.after.accuracy == r.before.accuracy and r.before.n == r.after.n == 6000 - r.n_fit
    assert "held-out split only" in r.note and "no answer changes" in r.note
    recal = apply_temperature_options(d["p"], r.params)
    assert (recal.argmax(axis=1) == d["p"].argmax(axis=1)).all()
    assert np.allclose(recal.sum(axis=1), 1.0)
    # the confidence that is scored: the answered option's recalibrated probability
    held = option_confidence(d["p"].tolist(), d["answered"], r.params)
    assert held == pytest.approx(recal[np.arange(6000), d["answered"]])
    assert (held < d["conf"]).all()  # T > 1 softens every top option


def test_option_form_beats_or_matches_logit_conf_on_option_data() -> None:
    d = overconfident_options(6000, seed=5)
    opt = evaluate_options(d["p"].tolist(), d["label"], d["answered"], d["conf"], d["correct"], seed=2)
    bare = evaluate("temperature", d["conf"], d["correct"], seed=2)
    assert bare.params.on == "logit_confidence"
    assert (opt.before.n, opt.before.ece) == (bare.before.n, bare.before.ece)  # the same held-out records
    assert opt.after.nll <= bare.after.nll + 0.01


def test_cross_fitting_and_groups_on_the_option_form() -> None:
    d = overconfident_options(3000, seed=7)
    items = np.repeat(np.arange(1500), 2)  # two records per item: never on both sides of a fold
    r = evaluate_options(d["p"].tolist(), d["label"], d["answered"], d["conf"], d["correct"], folds=5,
                         groups=items, seed=0)
    assert r.protocol.kind == "folds" and r.protocol.by_item and r.n_fit == 3000
    assert r.after.ece < r.before.ece and r.after.n == 3000
    assert r.params.temperature == pytest.approx(fit_temperature_options(d["p"], d["label"]).temperature)


def test_rows_of_different_option_counts_fit_one_temperature() -> None:
    three, five = overconfident_options(3000, seed=8, k=3), overconfident_options(3000, seed=9, k=5)
    rows = three["p"].tolist() + five["p"].tolist()
    label = np.concatenate([three["label"], five["label"]])
    answered = np.concatenate([three["answered"], five["answered"]])
    everything = np.ones(6000, dtype=bool)
    t = OptionRows(rows).fit(label, everything)
    assert t.temperature == pytest.approx(2.5, rel=0.1)
    # a single-K block gives exactly the rectangular fit
    assert OptionRows(three["p"].tolist()).fit(three["label"], np.ones(3000, dtype=bool)).temperature == \
        pytest.approx(fit_temperature_options(three["p"], three["label"]).temperature, rel=1e-9)
    conf = option_confidence(rows, answered, t)
    assert conf[:3000] == pytest.approx(apply_temperature_options(three["p"], t)[np.arange(3000), three["answered"]])
    assert conf[3000:] == pytest.approx(apply_temperature_options(five["p"], t)[np.arange(3000), five["answered"]])


def test_option_inputs_bad_input() -> None:
    with pytest.raises(ValueError, match="one option index per row"):
        option_confidence([[0.5, 0.5], [0.2, 0.3, 0.5]], [0, 3], TemperatureParams(temperature=2.0))
    with pytest.raises(ValueError, match="no mass"):
        OptionRows([[0.0, 0.0]])
    with pytest.raises(ValueError, match="finite and in"):
        OptionRows([[0.5, float("nan")]])
    with pytest.raises(ValueError, match="differ in length"):
        evaluate_options([[0.6, 0.4]] * 3, [0, 0, 1], [0, 0, 0], [0.6, 0.6], [1, 1])


def _rec(i: int, detail: ConfidenceDetail, conf: float = 0.7, correct: bool = True) -> Record:
    return make_record("r", i, conf, correct).model_copy(update={"detail": detail})


def test_which_records_feed_the_option_form() -> None:
    full = ConfidenceDetail(option_probs=(0.7, 0.2, 0.1), correct_option=0, answered_option=0, outside_topk=False)
    got = option_inputs([_rec(0, full), _rec(1, full.model_copy(update={"answered_option": None}))])
    assert got == ([(0.7, 0.2, 0.1), (0.7, 0.2, 0.1)], [0, 0], [0, 0])  # answered: stored, else the arg-max
    outside = ConfidenceDetail(correct_option=0, answered_option=0, outside_topk=True)  # share unknown, not 0
    old = ConfidenceDetail(option_mass=0.9, outside_topk=False)  # written before the fields existed
    why = option_inputs([_rec(0, full), _rec(1, outside), _rec(2, old), _rec(3, ConfidenceDetail())])
    assert why == ("3 of 4 scored records lack the full option distribution: 1 had an option outside the "
                   "top-k; 2 without option data (short answers, a source other than token, or records "
                   "written before probe stored it)")
    assert option_inputs([]) == "no scored records"


# -- the command line on a real simulator run ----------------------------------------------------


def _run(db: Path, spec: dict[str, object]) -> str:
    with running_sim() as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIM_BASE_URL", url)
        store = Store(db)
        plan = make_plan(RunSpec.model_validate(spec))
        info = new_run(plan, store)
        providers = open_providers(RunSpec.model_validate(spec))

        async def go() -> None:
            try:
                await execute(plan, store, info, providers, RetryPolicy.no_wait())
            finally:
                await close_providers(providers)

        asyncio.run(go())
        store.close()
    return info.run_id


@pytest.fixture(scope="module")
def sim_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """The calendar suite (240 four-option questions) on the overconfident persona: token and P(True),
    as asked and with the options shuffled; then a second, token-only run to check the calibrator on."""
    db = tmp_path_factory.mktemp("sim-options") / "probe.db"
    first = _run(db, {"suites": ["calendar"], "models": [MODEL], "sources": ["token", "ptrue"],
                      "variants": ["plain", "shuffled"], "concurrency": 64})
    second = _run(db, {"suites": ["calendar"], "models": [MODEL], "sources": ["token"],
                       "variants": ["plain", "shuffled"], "concurrency": 64})
    yield db, first, second


def test_simulator_records_store_the_distribution_in_original_order(sim_runs: tuple[Path, str, str]) -> None:
    db, run_id, _ = sim_runs
    store = Store(db)
    try:
        token = [r for r in store.records(run_id) if r.source == "token"]
    finally:
        store.close()
    suite = resolve_suite("calendar")
    questions = {q.id: q for q in suite.questions}
    variants = {v.id: v for v in suite.variants}
    assert len(token) == 480 and all(r.status == "ok" for r in token)
    by_item: dict[str, dict[str, ConfidenceDetail]] = {}
    moved = 0
    for r in token:
        d, q = r.detail, questions[r.item_id]
        prompt = answer_prompt(q, variants[r.variant])
        assert d.option_probs is not None and len(d.option_probs) == 4 and d.outside_topk is False
        assert d.correct_option == q.answer
        assert r.answer is not None and d.answered_option == prompt.choice_of_label(r.answer)
        assert sum(d.option_probs) == pytest.approx(1.0)
        assert d.option_probs[d.answered_option] == pytest.approx(r.confidence)  # indexed by original choice
        assert int(np.argmax(d.option_probs)) == d.answered_option  # greedy answer at temperature 0
        assert r.correct == (d.answered_option == d.correct_option)
        moved += prompt.order.index(d.answered_option) != d.answered_option
        by_item.setdefault(r.item_id, {})[r.variant] = d
    assert moved > 100  # the shuffle showed most answered options at another position
    # The simulator's belief about each choice barely moves with the order the options are shown in
    # (a small position bias), so in original order the two variants rank the options alike; stored in
    # shown order they would agree on about 1 item in 24.
    same = [(p["plain"], p["shuffled"]) for p in by_item.values()
            if p["plain"].answered_option == p["shuffled"].answered_option]
    alike = sum(np.argsort(a.option_probs).tolist() == np.argsort(b.option_probs).tolist() for a, b in same)
    assert len(same) > 200 and alike >= 0.9 * len(same)


def test_cli_fits_the_option_logits_when_every_record_has_them(cli: Cli, sim_runs: tuple[Path, str, str],
                                                               tmp_path: Path) -> None:
    db, run_id, second = sim_runs
    cal = tmp_path / "opt.json"
    code, out, _ = cli("calibrate", "fit", run_id, "--model", MODEL, "--source", "token", "--method", "temperature",
                       "-o", str(cal), "--db", str(db))
    assert code == 0
    assert "temperature on the option logits: all 480 scored records carry the full option distribution" in out
    assert "(on option_logits)" in out
    data = json.loads(cal.read_text())
    assert data["params"]["on"] == "option_logits" and data["params"]["temperature"] > 1.2
    assert data["form_note"].startswith("temperature on the option logits")
    held = data["held_out"]
    assert held["n_fit"] + held["after"]["n"] == 480  # disjoint, items kept on one side
    assert held["before"]["ece"] > 0.1 and held["after"]["ece"] < held["before"]["ece"]
    assert held["after"]["accuracy"] == held["before"]["accuracy"]

    # apply: a bare confidence is refused, a whole distribution is recalibrated
    code, _, err = cli("calibrate", "apply", str(cal), "0.9")
    assert code == 2 and "fitted on the option logits" in err and "value 1 ('0.9') is a bare confidence" in err
    code, out, _ = cli("calibrate", "apply", str(cal), "0.9,0.05,0.03,0.02", "0.5,0.5", "--json")
    assert code == 0
    vals = json.loads(out)
    first = vals[0]["calibrated"]
    assert sum(first) == pytest.approx(1.0) and max(first) == first[0] and first[0] < 0.9
    assert vals[1]["calibrated"] == pytest.approx([0.5, 0.5])
    for bad, message in (("0.5,x", "not a list of option probabilities"), ("0,0", "no probability on any")):
        code, _, err = cli("calibrate", "apply", str(cal), bad)
        assert code == 2 and message in err

    # check: scored on another run's option distributions
    code, out, _ = cli("calibrate", "check", str(cal), second, "--db", str(db), "--json")
    assert code == 0
    checked = json.loads(out)
    assert checked["params"]["on"] == "option_logits" and checked["before"]["n"] == 480
    assert checked["after"]["ece"] < checked["before"]["ece"]
    code, out, _ = cli("calibrate", "check", str(cal), second, "--db", str(db))
    assert code == 0 and "on option_logits" in out


def test_cli_falls_back_to_logit_conf_and_says_why(cli: Cli, sim_runs: tuple[Path, str, str],
                                                   tmp_path: Path) -> None:
    db, run_id, _ = sim_runs
    cal = tmp_path / "ptrue.json"
    code, out, _ = cli("calibrate", "fit", run_id, "--model", MODEL, "--source", "ptrue", "--method", "temperature",
                       "-o", str(cal), "--db", str(db))
    assert code == 0
    assert ("temperature on logit(conf), not on the option logits: 480 of 480 scored records lack the full "
            "option distribution") in out
    data = json.loads(cal.read_text())
    assert data["params"]["on"] == "logit_confidence" and "480 of 480" in data["form_note"]
    code, out, _ = cli("calibrate", "apply", str(cal), "0.9")  # the logit(conf) form takes bare confidences
    assert code == 0 and "0.9 →" in out
    # other methods are untouched by all this
    code, out, _ = cli("calibrate", "fit", run_id, "--model", MODEL, "--source", "token", "--method", "platt",
                       "-o", str(tmp_path / "platt.json"), "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["form_note"] is None


def test_cli_check_refuses_records_without_distributions(cli: Cli, sim_runs: tuple[Path, str, str],
                                                         tmp_path: Path,
                                                         store_factory: Callable[[RunInfo, list[Record]], Path]) -> None:
    db, run_id, _ = sim_runs
    cal = tmp_path / "opt.json"
    code, _, _ = cli("calibrate", "fit", run_id, "--model", MODEL, "--source", "token", "--method", "temperature",
                     "-o", str(cal), "--db", str(db))
    assert code == 0
    # a run of the same model / source whose records carry bare confidences only
    bare_db = store_factory(run_info("bare-1"), overconfident_records("bare-1", 300, seed=2))
    code, _, err = cli("calibrate", "check", str(cal), "bare-1", "--db", str(bare_db))
    assert code == 2 and "needs every record's option distribution" in err
    assert "300 of 300 scored records lack the full option distribution" in err and "Traceback" not in err
