"""The fast bootstrap against the plain loop of full resamples, and the paired bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from probe.analysis import bootstrap_intervals, exact_bootstrap, paired_bootstrap
from probe.analysis._arrays import Sorted, as_pairs
from probe.analysis._cells import build_cells, metrics_from_counts
from probe.analysis.bootstrap import METRICS, bootstrap_replicates, direct_metrics

FIELDS = {"accuracy": "accuracy", "ece": "ece_width", "ece_mass": "ece_mass", "brier": "brier",
          "auroc": "auroc"}


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.sort(a[~np.isnan(a)]), np.sort(b[~np.isnan(b)])
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def ks_critical(n: int, m: int, alpha_coef: float = 1.95) -> float:
    """Two-sample Kolmogorov–Smirnov critical value at α = 0.001."""
    return alpha_coef * np.sqrt((n + m) / (n * m))


def overconfident(n: int, seed: int, discrete: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(4, 2, n)
    correct = (rng.random(n) < p).astype(float)
    conf = 1 / (1 + np.exp(-2 * np.log(p / (1 - p))))
    if discrete:  # verbalized-style: multiples of 0.05
        conf = np.round(conf * 20) / 20
    return conf, correct


def test_cells_at_original_counts_reproduce_the_metrics() -> None:
    for discrete, max_cells in ((True, 4096), (False, 4096), (False, 40)):
        c, y = overconfident(3000, 1, discrete)
        cells = build_cells(Sorted.of(*as_pairs(c, y)), 10, max_cells)
        assert cells.exact == (max_cells == 4096)
        got = metrics_from_counts(cells, cells.pos[None, :], cells.neg[None, :])
        want = direct_metrics(*as_pairs(c, y), 10)
        for k in ("accuracy", "ece", "brier", "auroc"):
            assert getattr(got, FIELDS[k])[0] == pytest.approx(want[k], abs=1e-12), k
        tol = 1e-12 if cells.exact else 2e-3  # pooled cells: proportional split at the mass cuts
        assert got.ece_mass[0] == pytest.approx(want["ece_mass"], abs=tol)


@pytest.mark.parametrize(("discrete", "n", "max_cells"), [(True, 300, 4096), (False, 300, 4096),
                                                          (False, 3000, 256)])
def test_fast_bootstrap_matches_the_plain_loop(discrete: bool, n: int, max_cells: int) -> None:
    c, y = overconfident(n, 2, discrete)
    fast, cells = bootstrap_replicates(c, y, resamples=2000, seed=11, max_cells=max_cells)
    assert cells.exact == (max_cells == 4096)
    slow = exact_bootstrap(c, y, resamples=1000, seed=12)
    for k in METRICS:
        f, s = getattr(fast, FIELDS[k]), slow[k]
        assert ks_statistic(f, s) < ks_critical(f.size, s.size), k
        assert np.nanmean(f) == pytest.approx(np.nanmean(s), abs=0.1 * np.nanstd(s) + 1e-12), k
        assert np.nanstd(f) == pytest.approx(np.nanstd(s), rel=0.1), k


def test_intervals_are_seeded_and_bracket_the_estimate() -> None:
    c, y = overconfident(800, 3, False)
    a = bootstrap_intervals(c, y, seed=5, resamples=400)
    assert a == bootstrap_intervals(c, y, seed=5, resamples=400)
    assert a != bootstrap_intervals(c, y, seed=6, resamples=400)
    d = direct_metrics(*as_pairs(c, y), 10)
    for k, ci in (("accuracy", a.accuracy_ci), ("ece", a.ece_ci), ("ece_mass", a.ece_mass_ci),
                  ("brier", a.brier_ci), ("auroc", a.auroc_ci)):
        assert ci is not None and ci[0] < d[k] < ci[1], k
    assert a.resamples == 400 and a.auroc_defined == 400


def test_undefined_auroc_gives_no_interval() -> None:
    r = bootstrap_intervals([0.6, 0.7, 0.9], [1, 1, 1])
    assert r.auroc_ci is None and r.auroc_defined == 0
    assert r.accuracy_ci == (1.0, 1.0)
    one = bootstrap_intervals([0.7], [0])
    assert one.ece_ci == pytest.approx((0.7, 0.7)) and one.brier_ci == pytest.approx((0.49, 0.49))


def _paired_plain_loop(items: np.ndarray, ca: np.ndarray, ya: np.ndarray, cb: np.ndarray, yb: np.ndarray,
                       metric: str, resamples: int, seed: int) -> np.ndarray:
    """Reference: resample items, gather every record of each drawn item in both groups, recompute."""
    uniq = np.unique(items)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(resamples):
        drawn = rng.integers(0, uniq.size, uniq.size)
        counts = np.bincount(drawn, minlength=uniq.size)
        rep = counts[np.searchsorted(uniq, items)]
        ia = np.repeat(np.arange(items.size), rep)
        da = direct_metrics(ca[ia], ya[ia], 10)[metric]  # type: ignore[index]
        db = direct_metrics(cb[ia], yb[ia], 10)[metric]  # type: ignore[index]
        out.append(da - db)
    return np.asarray(out)


@pytest.mark.parametrize("metric", ["accuracy", "ece", "ece_mass", "brier", "auroc"])
def test_paired_bootstrap_matches_the_plain_loop(metric: str) -> None:
    rng = np.random.default_rng(4)
    n_items = 150
    items = np.repeat(np.arange(n_items), 2).astype(str)  # two samples per item
    difficulty = rng.beta(3, 2, n_items).repeat(2)
    ya = (rng.random(items.size) < difficulty).astype(float)
    yb = (rng.random(items.size) < difficulty).astype(float)
    ca = np.clip(difficulty + rng.normal(0, 0.1, items.size), 0, 1)
    cb = np.clip(difficulty ** 0.5 + rng.normal(0, 0.1, items.size), 0, 1)  # overconfident b
    fast = paired_bootstrap(items, ca, ya, items, cb, yb, metric=metric, resamples=2000, seed=1)  # type: ignore[arg-type]
    slow = _paired_plain_loop(items, ca, ya, cb, yb, metric, 600, 2)
    assert fast.items == n_items and fast.n_a == fast.n_b == items.size
    assert fast.difference == pytest.approx(direct_metrics(ca, ya, 10)[metric]  # type: ignore[index]
                                            - direct_metrics(cb, yb, 10)[metric])  # type: ignore[index]
    assert fast.ci is not None
    lo, hi = np.quantile(slow, [0.025, 0.975])
    spread = hi - lo
    assert fast.ci[0] == pytest.approx(lo, abs=0.15 * spread)
    assert fast.ci[1] == pytest.approx(hi, abs=0.15 * spread)


def test_paired_difference_of_identical_groups_is_zero() -> None:
    c, y = overconfident(200, 5, True)
    items = np.arange(200)
    r = paired_bootstrap(items, c, y, items, c, y, metric="ece")
    assert r.difference == 0.0 and r.ci == (0.0, 0.0) and r.p_value == 1.0


def test_paired_detects_a_real_difference_and_ignores_unshared_items() -> None:
    rng = np.random.default_rng(6)
    p = rng.beta(4, 2, 600)
    y = (rng.random(600) < p).astype(float)
    calibrated = p
    over = 1 / (1 + np.exp(-3 * np.log(p / (1 - p))))
    items = np.arange(600)
    r = paired_bootstrap(items, over, y, items[:500], calibrated[:500], y[:500], metric="ece", seed=3)
    assert r.items == 500 and r.n_a == 500 and r.n_b == 500
    assert r.difference is not None and r.difference > 0
    assert r.ci is not None and r.ci[0] > 0
    assert r.p_value is not None and r.p_value < 0.01
    same_auroc = paired_bootstrap(items, over, y, items, calibrated, y, metric="auroc")
    assert same_auroc.difference == pytest.approx(0.0, abs=1e-12)  # monotone map: same ranking


def test_paired_without_shared_items_or_undefined_metric() -> None:
    r = paired_bootstrap(["a"], [0.5], [1], ["b"], [0.5], [1], metric="accuracy")
    assert (r.items, r.difference, r.ci, r.p_value) == (0, None, None, None)
    r = paired_bootstrap(["a", "b"], [0.5, 0.6], [1, 1], ["a", "b"], [0.5, 0.6], [1, 0], metric="auroc")
    assert r.a is None and r.difference is None
    with pytest.raises(ValueError, match="metric"):
        paired_bootstrap(["a"], [0.5], [1], ["a"], [0.5], [1], metric="f1")  # type: ignore[arg-type]
