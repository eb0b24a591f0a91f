"""The ECE a perfectly calibrated model shows from noise alone: the floor to read an ECE against."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probe.analysis.metrics import calibration_metrics, ece_if_calibrated


def test_hand_computed_single_bin() -> None:
    # ten records at 0.95 (bin 9): sqrt(10 · 0.95 · 0.05) / 10 · sqrt(2/π)
    conf = np.full(10, 0.95)
    assert ece_if_calibrated(conf, 10) == pytest.approx(math.sqrt(10 * 0.95 * 0.05) / 10 * math.sqrt(2 / math.pi))
    # certain confidences carry no noise
    assert ece_if_calibrated(np.array([0.0, 1.0, 1.0]), 10) == 0.0


@pytest.mark.parametrize("n", [180, 2000])
def test_matches_the_mean_ece_of_simulated_calibrated_outcomes(n: int) -> None:
    rng = np.random.default_rng(7)
    conf = rng.uniform(0.25, 1.0, n)
    simulated = [calibration_metrics(conf, (rng.uniform(size=n) < conf).astype(float)).width.ece
                 for _ in range(300)]
    floor = calibration_metrics(conf, np.ones(n)).ece_width_if_calibrated
    assert floor == pytest.approx(float(np.mean(simulated)), rel=0.1)
    # and it shrinks like 1/sqrt(n)
    assert ece_if_calibrated(np.tile(conf, 4), 10) == pytest.approx(floor / 2, rel=1e-9)
