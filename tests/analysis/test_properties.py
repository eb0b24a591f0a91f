"""Property tests: bounds, order invariance, equal-mass sizes, shrinking ECE, monotone recalibration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.analysis import (
    METHODS,
    apply_temperature_options,
    calibration_metrics,
    fit,
    fit_temperature_options,
)
from probe.analysis._arrays import Sorted, as_pairs
from probe.analysis.curves import mass_table

# confidences: continuous values plus the edge values verbalized confidence lands on (ties)
conf_value = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.1, 0.5, 0.8, 0.9, 0.95, 1.0]))
records = st.lists(st.tuples(conf_value, st.booleans()), min_size=1, max_size=120)
bins = st.integers(1, 20)


def _arrays(recs: list[tuple[float, bool]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([c for c, _ in recs]), np.array([y for _, y in recs], dtype=float)


@settings(max_examples=150, deadline=None)
@given(records, bins)
def test_errors_and_brier_lie_in_unit_interval(recs: list[tuple[float, bool]], m: int) -> None:
    c, y = _arrays(recs)
    r = calibration_metrics(c, y, m)
    for e in (r.width, r.mass):
        assert 0.0 <= e.ece <= 1.0 + 1e-12
        assert 0.0 <= e.mce <= 1.0 + 1e-12
        assert 0.0 <= e.rms_ce <= 1.0 + 1e-12
        assert e.ece <= e.rms_ce + 1e-12 <= e.mce + 2e-12  # weighted mean ≤ weighted RMS ≤ max
        # signed ECE over any binning is mean confidence − accuracy
        assert e.signed_ece == pytest.approx(c.mean() - y.mean(), abs=1e-12)
    assert 0.0 <= r.brier <= 1.0
    assert 0.0 <= r.ace <= 1.0 + 1e-12
    assert 0.0 <= r.aurc <= 1.0 and 0.0 <= r.selective_accuracy_50 <= 1.0
    if r.auroc is not None:
        assert 0.0 <= r.auroc <= 1.0
        if np.unique(1.0 - c).size == np.unique(c).size:  # 1 − c keeps every value apart
            flipped = calibration_metrics(1.0 - c, y, m).auroc
            assert flipped == pytest.approx(1.0 - r.auroc, abs=1e-12)
    else:
        assert y.min() == y.max()


@settings(max_examples=150, deadline=None)
@given(records, bins, st.randoms(use_true_random=False))
def test_invariant_to_record_order(recs: list[tuple[float, bool]], m: int, rnd: object) -> None:
    shuffled = list(recs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a = calibration_metrics(*_arrays(recs), m).model_dump()
    b = calibration_metrics(*_arrays(shuffled), m).model_dump()
    assert _close(a, b)


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9
    return a == b


@settings(max_examples=150, deadline=None)
@given(records, bins)
def test_equal_mass_bins_differ_in_size_by_at_most_one(recs: list[tuple[float, bool]], m: int) -> None:
    c, y = as_pairs(*_arrays(recs))
    t = mass_table(Sorted.of(c, y), m)
    assert t.n.sum() == c.size
    assert t.n.max() - t.n.min() <= 1
    assert (np.diff(t.n) <= 0).all()  # array_split: the longer parts come first
    lo, hi = t.lo[t.n > 0], t.hi[t.n > 0]
    assert (lo <= hi).all() and (hi[:-1] <= lo[1:]).all()  # contiguous in confidence


def test_perfectly_calibrated_data_gives_shrinking_ece() -> None:
    rng = np.random.default_rng(7)
    means = []
    for n in (100, 1_000, 10_000, 100_000):
        eces = []
        for _ in range(5):
            conf = rng.random(n)
            correct = rng.random(n) < conf  # P(correct | conf) = conf exactly
            r = calibration_metrics(conf, correct, 10)
            eces.append((r.width.ece, r.mass.ece))
        means.append(np.mean(eces, axis=0))
    width, mass = np.array(means).T
    assert (np.diff(width) < 0).all() and (np.diff(mass) < 0).all()
    assert width[-1] < 0.01 and mass[-1] < 0.01


fit_records = st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=4, max_size=80)


@settings(max_examples=60, deadline=None)
@given(fit_records, st.sampled_from(METHODS))
def test_recalibration_is_monotone_and_stays_in_unit_interval(recs: list[tuple[float, bool]], method: str) -> None:
    c, y = _arrays(recs)
    params = fit(method, c, y)  # type: ignore[arg-type]
    grid = np.concatenate([np.linspace(0.0, 1.0, 501), np.sort(c)])
    grid.sort()
    out = params.apply(grid)
    assert np.all(np.isfinite(out)) and out.min() >= 0.0 and out.max() <= 1.0
    assert (np.diff(out) >= -1e-12).all()


@settings(max_examples=60, deadline=None)
@given(fit_records, st.sampled_from(METHODS), st.integers(2, 6), st.integers(0, 2**31))
def test_recalibration_never_changes_the_chosen_option(recs: list[tuple[float, bool]], method: str, k: int,
                                                       seed: int) -> None:
    c, y = _arrays(recs)
    params = fit(method, c, y)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=50)
    chosen = probs.argmax(axis=1)
    mapped = params.apply(probs.ravel()).reshape(probs.shape)
    # the originally chosen option is still (one of) the most probable after the map
    assert (mapped[np.arange(50), chosen] >= mapped.max(axis=1) - 1e-12).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31), st.floats(0.2, 5.0))
def test_option_temperature_keeps_argmax(k: int, seed: int, true_t: float) -> None:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(200, k)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    truth = np.exp(logits / true_t)
    truth /= truth.sum(axis=1, keepdims=True)
    label = np.minimum((rng.random((200, 1)) > truth.cumsum(axis=1)).sum(axis=1), k - 1)
    params = fit_temperature_options(probs, label)
    out = apply_temperature_options(probs, params)
    assert (out.argmax(axis=1) == probs.argmax(axis=1)).all()
    assert np.allclose(out.sum(axis=1), 1.0)
