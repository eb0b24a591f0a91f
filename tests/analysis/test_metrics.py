"""Hand-computed examples for every metric and both binnings (values worked out on paper below)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probe.analysis import calibration_metrics, wilson
from probe.analysis._arrays import Sorted, as_pairs, split_sizes, width_index
from probe.analysis.ranking import coverage_curve, risk_coverage, selective_accuracy

approx = pytest.approx

# Six records; equal-width M = 10 puts them in bins 0 (0.0, 0.05), 1 (0.1, 0.15), 9 (0.95, 1.0).
CONF = [0.0, 0.05, 0.1, 0.15, 0.95, 1.0]
CORRECT = [0, 0, 1, 0, 1, 1]


def test_width_bins_include_exact_zero_and_one() -> None:
    m = calibration_metrics(CONF, CORRECT, bins=10)
    b = m.bins_width
    assert [x.n for x in b] == [2, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert (b[0].lo, b[0].hi, b[9].lo, b[9].hi) == (0.0, 0.1, 0.9, 1.0)
    assert b[0].mean_confidence == approx(0.025) and b[0].accuracy == 0.0
    assert b[1].mean_confidence == approx(0.125) and b[1].accuracy == 0.5
    assert b[9].mean_confidence == approx(0.975) and b[9].accuracy == 1.0
    # empty bins: no made-up numbers
    assert b[5].mean_confidence is None and b[5].accuracy is None and b[5].accuracy_ci is None
    assert all(x.sparse for x in b)


def test_width_metrics_by_hand() -> None:
    m = calibration_metrics(CONF, CORRECT, bins=10)
    # gaps conf_b − acc_b: 0.025, −0.375, −0.025, each bin weight 1/3
    assert m.accuracy == 0.5
    assert m.width.ece == approx((0.025 + 0.375 + 0.025) / 3)
    assert m.width.signed_ece == approx((0.025 - 0.375 - 0.025) / 3)
    assert m.width.mce == approx(0.375)
    assert m.width.rms_ce == approx(math.sqrt((0.025**2 + 0.375**2 + 0.025**2) / 3))


def test_mass_metrics_by_hand() -> None:
    # M = 4 over 6 records: sizes 2, 2, 1, 1 → {0, .05}, {.1, .15}, {.95}, {1.0}
    m = calibration_metrics(CONF, CORRECT, bins=4)
    assert [b.n for b in m.bins_mass] == [2, 2, 1, 1]
    assert [(b.lo, b.hi) for b in m.bins_mass] == [(0.0, 0.05), (0.1, 0.15), (0.95, 0.95), (1.0, 1.0)]
    gaps = [0.025, 0.375, 0.05, 0.0]
    assert m.mass.ece == approx((2 * 0.025 + 2 * 0.375 + 0.05 + 0.0) / 6)
    assert m.ace == approx(sum(gaps) / 4)
    assert m.mass.mce == approx(0.375)
    assert m.mass.signed_ece == approx((2 * 0.025 - 2 * 0.375 - 0.05) / 6)


def test_brier_and_decomposition_by_hand() -> None:
    m = calibration_metrics(CONF, CORRECT, bins=10)
    brier = (0 + 0.05**2 + 0.9**2 + 0.15**2 + 0.05**2 + 0) / 6
    assert m.brier == approx(brier)
    d = m.brier_decomposition
    assert d.reliability == approx((0.025**2 + 0.375**2 + 0.025**2) / 3)
    assert d.resolution == approx(((0 - 0.5) ** 2 + 0 + (1 - 0.5) ** 2) / 3)
    assert d.uncertainty == approx(0.25)
    assert d.residual == approx(brier - (d.reliability - d.resolution + d.uncertainty))
    assert d.residual != approx(0.0)  # within-bin spread: not exact for the unbinned forecast


def test_decomposition_exact_when_forecast_is_binned() -> None:
    # every record in a bin has the bin's confidence → residual 0
    m = calibration_metrics([0.25, 0.25, 0.25, 0.25, 0.85, 0.85], [0, 0, 1, 0, 1, 1], bins=10)
    d = m.brier_decomposition
    assert d.residual == approx(0.0, abs=1e-15)
    assert m.brier == approx(d.reliability - d.resolution + d.uncertainty)


def test_nll_by_hand_with_clip() -> None:
    m = calibration_metrics(CONF, CORRECT, bins=10)
    eps = 1e-12
    terms = [-math.log(1 - eps), -math.log(0.95), -math.log(0.1), -math.log(0.85), -math.log(0.95),
             -math.log(1 - eps)]
    assert m.nll == approx(sum(terms) / 6)
    # a confident wrong answer at exactly 1.0 costs −log(1e-12), not infinity
    assert calibration_metrics([1.0], [0]).nll == approx(-math.log(eps))


def test_auroc_selective_and_aurc_by_hand() -> None:
    m = calibration_metrics(CONF, CORRECT, bins=10)
    # correct {0.1, 0.95, 1.0} vs wrong {0.0, 0.05, 0.15}: 2 + 3 + 3 of 9 pairs ordered right
    assert m.auroc == approx(8 / 9)
    # top 3 by confidence: 1.0 ✓, 0.95 ✓, 0.15 ✗
    assert m.selective_accuracy_50 == approx(2 / 3)
    # correctness by descending confidence 1,1,0,1,0,0 → risks 0, 0, 1/3, 1/4, 2/5, 1/2
    assert m.aurc == approx((0 + 0 + 1 / 3 + 1 / 4 + 2 / 5 + 1 / 2) / 6)
    cov, risk = risk_coverage(Sorted.of(*as_pairs(CONF, CORRECT)))
    assert cov.tolist() == approx([1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1.0])
    assert risk.tolist() == approx([0, 0, 1 / 3, 1 / 4, 2 / 5, 1 / 2])


def test_ties_count_half_and_are_shared_at_a_cut() -> None:
    m = calibration_metrics([0.2, 0.5, 0.5, 0.9], [0, 1, 0, 1])
    # pairs: (.5 vs .2) 1, (.5 vs .5) ½, (.9 vs both) 2 → 3.5 / 4
    assert m.auroc == approx(0.875)
    # top 2: 0.9 ✓ then one of the tied 0.5s (half right on average)
    assert m.selective_accuracy_50 == approx(0.75)
    all_tied = calibration_metrics([0.8] * 4, [1, 1, 0, 0])
    assert all_tied.auroc == approx(0.5)
    assert all_tied.selective_accuracy_50 == approx(0.5)


def test_selective_accuracy_at_a_fractional_cut() -> None:
    s = Sorted.of(*as_pairs([0.9, 0.8, 0.7], [1, 0, 0]))
    # 50 % of 3 records = 1.5: the first record and half of the second
    assert selective_accuracy(s, 0.5) == approx(1 / 1.5)
    pts = coverage_curve(s, np.array([1 / 3, 1.0]))
    assert [p.accuracy for p in pts] == approx([1.0, 1 / 3])
    assert [p.threshold for p in pts] == [0.9, 0.7]


def test_mass_bin_tie_group_straddling_a_cut_is_shared() -> None:
    # M = 2, sizes 2 + 2; the tied 0.5s (one right, one wrong) straddle the cut
    for correct in ([0, 1, 0, 1], [0, 0, 1, 1]):
        m = calibration_metrics([0.3, 0.5, 0.5, 0.9], correct, bins=2)
        assert [b.accuracy for b in m.bins_mass] == approx([0.25, 0.75])
        assert m.mass.ece == approx(0.5 * abs(0.4 - 0.25) + 0.5 * abs(0.7 - 0.75))


def test_single_record() -> None:
    m = calibration_metrics([0.7], [1])
    assert m.n == 1 and m.accuracy == 1.0
    assert m.width.ece == approx(0.3) and m.mass.ece == approx(0.3) and m.ace == approx(0.3)
    assert m.width.mce == approx(0.3) and m.width.signed_ece == approx(-0.3)
    assert m.brier == approx(0.09)
    assert m.auroc is None
    assert m.selective_accuracy_50 == 1.0 and m.aurc == 0.0
    assert [b.n for b in m.bins_mass] == [1] + [0] * 9
    assert m.bins_mass[0].lo == m.bins_mass[0].hi == 0.7
    assert m.bins_mass[1].lo is None and m.bins_mass[1].accuracy is None


def test_all_correct_and_all_wrong() -> None:
    right = calibration_metrics([0.6, 0.9], [1, 1])
    assert right.auroc is None
    assert right.width.ece == approx(0.5 * 0.4 + 0.5 * 0.1)
    assert right.brier == approx((0.16 + 0.01) / 2)
    d = right.brier_decomposition
    assert (d.uncertainty, d.resolution) == (0.0, 0.0) and d.reliability == approx(0.085)
    assert right.aurc == 0.0 and right.selective_accuracy_50 == 1.0
    wrong = calibration_metrics([0.2, 0.2], [False, False])
    assert wrong.auroc is None
    assert wrong.width.ece == approx(0.2) and wrong.width.signed_ece == approx(0.2)
    assert wrong.nll == approx(-math.log(0.8))
    assert wrong.aurc == 1.0 and wrong.selective_accuracy_50 == 0.0


def test_verbal_edges_land_in_the_bin_they_open() -> None:
    edges = np.array([k / 10 for k in range(11)])
    assert width_index(edges, 10).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    assert width_index(np.array([0.0, 1.0, 14 / 15]), 15).tolist() == [0, 14, 14]


def test_wilson_interval_values() -> None:
    z2 = 1.959963984540054**2
    lo, hi = wilson(np.array([1.0, 0.0, 3.0, 0.0]), np.array([2, 3, 3, 0]))
    # 1 of 2: centre ½, half-width z·sqrt(1/8 + z²/16)/(1 + z²/2)
    half = math.sqrt(z2) * math.sqrt(1 / 8 + z2 / 16) / (1 + z2 / 2)
    assert (lo[0], hi[0]) == (approx(0.5 - half), approx(0.5 + half))
    assert lo[0] == approx(0.0945, abs=1e-4)
    # 0 of n: [0, z²/(n + z²)]; n of n: [n/(n + z²), 1]
    assert (lo[1], hi[1]) == (0.0, approx(z2 / (3 + z2)))
    assert (lo[2], hi[2]) == (approx(3 / (3 + z2)), 1.0)
    assert np.isnan(lo[3]) and np.isnan(hi[3])
    m = calibration_metrics([0.05, 0.06, 0.07], [0, 0, 0])
    assert m.bins_width[0].accuracy_ci == (0.0, approx(0.5615, abs=1e-4))


def test_split_sizes_match_numpy_array_split() -> None:
    for n in (0, 1, 5, 10, 11, 99):
        for m in (1, 3, 10):
            assert split_sizes(n, m).tolist() == [len(p) for p in np.array_split(np.arange(n), m)]


@pytest.mark.parametrize(("conf", "correct", "message"), [
    ([0.5, float("nan")], [1, 0], "index 1"),
    ([0.5, 1.2], [1, 0], "index 1"),
    ([-0.01], [1], "index 0"),
    ([float("inf")], [1], "finite"),
    ([0.5], [2], "correct must be 0/1"),
    ([0.5, 0.6], [1], "differ in length"),
    ([], [], "no records"),
])
def test_bad_input_raises(conf: list[float], correct: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        calibration_metrics(conf, correct)


def test_bins_must_be_positive() -> None:
    with pytest.raises(ValueError, match="bins"):
        calibration_metrics([0.5], [1], bins=0)
