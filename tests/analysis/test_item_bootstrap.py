"""Groups whose records share items are resampled by item: correlated records are not extra evidence."""

from __future__ import annotations

import numpy as np

from probe.analysis.bootstrap import bootstrap_intervals, item_bootstrap_intervals


def width(ci: tuple[float, float]) -> float:
    return ci[1] - ci[0]


def test_copies_of_an_item_do_not_narrow_the_interval() -> None:
    rng = np.random.default_rng(3)
    n = 150
    conf = rng.uniform(0.3, 1.0, n)
    correct = (rng.uniform(size=n) < conf).astype(float)
    items = np.arange(n)
    one = item_bootstrap_intervals(items, conf, correct, resamples=400, seed=1)
    # the same 150 answers recorded three times (three identical prompt variants)
    tripled = item_bootstrap_intervals(np.tile(items, 3), np.tile(conf, 3), np.tile(correct, 3),
                                       resamples=400, seed=1)
    naive = bootstrap_intervals(np.tile(conf, 3), np.tile(correct, 3), resamples=400, seed=1)
    assert tripled.unit == "item" and naive.unit == "record"
    for field in ("accuracy_ci", "ece_ci", "brier_ci"):
        a, b, c = getattr(one, field), getattr(tripled, field), getattr(naive, field)
        assert abs(width(a) - width(b)) < 0.25 * width(a)  # copies add no information
        assert width(c) < 0.75 * width(b)  # resampling records would overstate it (about 1/sqrt(3))


def test_one_record_per_item_matches_the_record_bootstrap() -> None:
    rng = np.random.default_rng(4)
    n = 400
    conf = rng.uniform(0.2, 1.0, n)
    correct = (rng.uniform(size=n) < conf).astype(float)
    by_item = item_bootstrap_intervals(np.arange(n), conf, correct, resamples=600, seed=2)
    by_record = bootstrap_intervals(conf, correct, resamples=600, seed=2)
    for field in ("accuracy_ci", "ece_ci", "brier_ci", "auroc_ci"):
        a, b = getattr(by_item, field), getattr(by_record, field)
        assert abs(a[0] - b[0]) < 0.02 and abs(a[1] - b[1]) < 0.02, field
