"""Recalibration: fitted maps by hand, the held-out protocol, and improvement on overconfident data."""

from __future__ import annotations

import numpy as np
import pytest

from probe.analysis import (
    METHODS,
    Calibrator,
    FittedOn,
    evaluate,
    fit,
    fit_histogram,
    fit_isotonic,
    fit_platt,
    fit_temperature,
    kfold_assign,
    scored_arrays,
    select_records,
    stratified_split,
)
from probe.analysis.recalibration import Protocol, TemperatureParams, logit, pav, sigmoid
from probe.record import Record
from probe.storage import RunInfo

from .conftest import MODEL


def test_pav_pools_adjacent_violators() -> None:
    means, sizes = pav(np.array([3.0, 1.0, 2.0, 5.0, 4.0]), np.ones(5))
    assert means.tolist() == [2.0, 4.5] and sizes.tolist() == [3, 2]
    means, sizes = pav(np.array([0.0, 1.0]), np.array([1.0, 3.0]))
    assert means.tolist() == [0.0, 1.0] and sizes.tolist() == [1, 1]


def test_isotonic_by_hand() -> None:
    iso = fit_isotonic([0.1, 0.2, 0.3, 0.4], [1, 0, 1, 1])
    assert iso.x == [0.1, 0.2, 0.3, 0.4] and iso.y == [0.5, 0.5, 1.0, 1.0]
    out = iso.apply(np.array([0.0, 0.15, 0.25, 0.4, 1.0]))
    assert out.tolist() == pytest.approx([0.5, 0.5, 0.75, 1.0, 1.0])


def test_histogram_binning_by_hand() -> None:
    # 4 equal-mass bins of 2: accuracies 0, ½, 1, ½ → made monotone: 0, ½, ¾, ¾
    h = fit_histogram([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9], [0, 0, 1, 0, 1, 1, 0, 1], bins=4)
    assert h.lower_edges == [0.0, 0.3, 0.6, 0.8]
    assert h.values == [0.0, 0.5, 0.75, 0.75]
    assert h.apply(np.array([0.0, 0.29, 0.3, 0.65, 1.0])).tolist() == [0.0, 0.0, 0.5, 0.75, 0.75]


def test_histogram_keeps_ties_in_one_bin() -> None:
    h = fit_histogram([0.9] * 6 + [0.5] * 2, [1, 1, 1, 0, 1, 1, 0, 1], bins=4)
    assert h.lower_edges == [0.0, 0.9]
    assert h.values == pytest.approx([0.5, 5 / 6])


def test_temperature_recovers_a_known_temperature() -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(4, 2, 20_000)
    y = rng.random(p.size) < p
    t = fit_temperature(sigmoid(2.5 * logit(p)), y)
    assert t.temperature == pytest.approx(2.5, rel=0.05)
    assert fit_temperature(p, y).temperature == pytest.approx(1.0, rel=0.05)
    # applying it: σ(logit(0.9)/T)
    assert t.apply(np.array([0.9]))[0] == pytest.approx(1 / (1 + 9 ** (-1 / t.temperature)))


def test_platt_recovers_slope_and_intercept() -> None:
    rng = np.random.default_rng(1)
    conf = rng.beta(2, 2, 20_000)
    truth = sigmoid(0.5 * logit(conf) + 0.4)
    y = rng.random(conf.size) < truth
    pl = fit_platt(conf, y)
    assert pl.a == pytest.approx(0.5, abs=0.05) and pl.b == pytest.approx(0.4, abs=0.05)


def test_platt_never_turns_the_ranking_around() -> None:
    # confidence anti-correlated with correctness: the best monotone map is a constant
    pl = fit_platt([0.9, 0.8, 0.2, 0.1] * 10, [0, 0, 1, 1] * 10)
    assert pl.a == 0.0
    assert pl.apply(np.array([0.1, 0.9])).tolist() == pytest.approx([0.5, 0.5], abs=0.01)


def test_stratified_split_is_seeded_stratified_and_keeps_items_together() -> None:
    y = np.array([1] * 60 + [0] * 40, dtype=float)
    m = stratified_split(y, 0.5, seed=3)
    assert m[y == 1].sum() == 30 and m[y == 0].sum() == 20
    assert (m == stratified_split(y, 0.5, seed=3)).all()
    assert not (m == stratified_split(y, 0.5, seed=4)).all()
    items = np.repeat(np.arange(50), 2)
    yy = np.repeat(np.array([1] * 30 + [0] * 20, dtype=float), 2)
    mm = stratified_split(yy, 0.5, seed=3, groups=items)
    assert (mm[0::2] == mm[1::2]).all()  # both samples of an item on one side
    with pytest.raises(ValueError, match="too few"):
        stratified_split([1.0], 0.5)


def test_kfold_covers_every_record_once_with_balanced_folds() -> None:
    y = np.array([1] * 50 + [0] * 25, dtype=float)
    f = kfold_assign(y, 5, seed=0)
    assert sorted(np.bincount(f).tolist()) == [15] * 5
    assert all(np.bincount(f[y == 1]) == 10) and all(np.bincount(f[y == 0]) == 5)
    with pytest.raises(ValueError, match="folds"):
        kfold_assign(y[:3], 5)


@pytest.mark.parametrize("method", METHODS)
def test_split_protocol_scores_only_held_out_records(method: str) -> None:
    rng = np.random.default_rng(2)
    c = rng.random(400)
    y = (rng.random(400) < c).astype(float)
    r = evaluate(method, c, y, fraction=0.5, seed=9)  # type: ignore[arg-type]
    mask = stratified_split(y, 0.5, seed=9) == 1.0
    assert r.n_fit == mask.sum() and r.before.n == r.after.n == (~mask).sum()
    assert r.n_fit_correct == y[mask].sum()
    assert r.params == fit(method, c[mask], y[mask])  # type: ignore[arg-type]
    assert r.after.accuracy == r.before.accuracy  # recalibration never changes answers


def test_cross_fitting_scores_every_record_out_of_fold() -> None:
    rng = np.random.default_rng(3)
    c = rng.random(300)
    y = (rng.random(300) < c ** 2).astype(float)
    r = evaluate("isotonic", c, y, fraction=None, folds=4, seed=0)
    assert r.before.n == r.after.n == 300 and r.protocol.kind == "folds" and r.protocol.folds == 4
    fold = kfold_assign(y, 4, 0)
    manual = np.empty(300)
    for k in range(4):
        manual[fold == k] = fit_isotonic(c[fold != k], y[fold != k]).apply(c[fold == k])
    from probe.analysis import calibration_metrics
    assert r.after.ece == pytest.approx(calibration_metrics(manual, y).width.ece)


def _group(run: tuple[RunInfo, list[Record]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _, records = run
    conf, correct, keys = scored_arrays(select_records(records, MODEL, "token"))
    return conf, correct, np.array([f"{s}/{i}" for s, i, _ in keys])


@pytest.mark.parametrize("method", ["temperature", "isotonic", "platt", "histogram"])
@pytest.mark.parametrize("protocol", ["split", "folds"])
def test_held_out_ece_drops_on_an_overconfident_model(overconfident_run: tuple[RunInfo, list[Record]],
                                                      method: str, protocol: str) -> None:
    conf, correct, items = _group(overconfident_run)
    kw = {"fraction": 0.5} if protocol == "split" else {"fraction": None, "folds": 5}
    r = evaluate(method, conf, correct, groups=items, seed=0, **kw)  # type: ignore[arg-type]
    assert r.before.ece > 0.1  # the model is clearly overconfident
    assert r.after.ece < r.before.ece / 2
    assert r.after.ece_mass < r.before.ece_mass
    assert r.after.brier < r.before.brier and r.after.nll < r.before.nll
    if method in ("temperature", "platt") and protocol == "split":
        # one strictly increasing map over all held-out records: the ranking is kept
        # (cross-fitting applies a different map per fold, which may reorder records across folds)
        assert r.after.auroc == pytest.approx(r.before.auroc)


def test_calibrator_json_round_trip_and_apply() -> None:
    rng = np.random.default_rng(4)
    c = rng.random(200)
    y = (rng.random(200) < c).astype(float)
    r = evaluate("isotonic", c, y)
    cal = Calibrator(method="isotonic", params=r.params, held_out=r,
                     fitted_on=FittedOn(run_id="r", suites=["s"], model="m/x", source="token", variant="*",
                                        n=r.n_fit, n_correct=r.n_fit_correct, protocol=r.protocol))
    back = Calibrator.model_validate_json(cal.model_dump_json())
    assert back == cal
    assert back.apply([0.93, 0.41]).tolist() == cal.params.apply(np.array([0.93, 0.41])).tolist()
    with pytest.raises(ValueError, match="finite number in"):
        back.apply([1.5])
    opt = cal.model_copy(update={"method": "temperature",
                                 "params": TemperatureParams(temperature=2.0, on="option_logits")})
    with pytest.raises(ValueError, match="option distributions"):
        opt.apply([0.5])
    assert Protocol(kind="split", fraction=0.5, seed=0, by_item=True).kind == "split"
