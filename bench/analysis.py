"""Benchmark: every analysis metric for both binnings plus bootstrap intervals on 1,000,000 records.

    /work/venv/bin/python bench/analysis.py [--n 1000000] [--resamples 1000] [--repeat 3]

The measured unit is what a report does for one group: ``calibration_metrics`` (equal-width and
equal-mass curves, ECE, signed ECE, MCE, ACE, RMS-CE, Brier + decomposition, NLL, AUROC,
selective accuracy, AURC, coverage curve) and ``bootstrap_intervals`` (B resamples of accuracy,
ECE for both binnings, Brier and AUROC). Figures are printed as ratios to the 10 s limit of the
issue and to peers measured in the same run: the plain loop of full resamples (timed on a few
resamples and scaled to B), and, when installed, scikit-learn / netcal / torchmetrics for the
same ECE (they are not dependencies of probe; install them elsewhere and put them on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from probe.analysis import BootstrapIntervals, CalibrationMetrics, exact_bootstrap
from probe.analysis._arrays import Sorted, as_pairs
from probe.analysis.bootstrap import intervals_of_sorted
from probe.analysis.curves import width_table
from probe.analysis.metrics import metrics_of_sorted
from probe.analysis.ranking import auroc

LIMIT_S = 10.0


def synth(n: int, seed: int, verbal: bool) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident model: P(correct) = p ~ Beta(4, 2), reported σ(2·logit p) (verbal: rounded to 5 %)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(4, 2, n)
    correct = (rng.random(n) < p).astype(np.float64)
    conf = 1.0 / (1.0 + np.exp(-2.0 * np.log(p / (1.0 - p))))
    if verbal:
        conf = np.round(conf * 20) / 20
    return conf, correct


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, float, object]:
    """Median, min and max wall time of ``repeat`` calls, and the last result."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times), out


def numpy_ece(conf: np.ndarray, correct: np.ndarray) -> float:
    t = width_table(conf, correct, 10)
    return float(np.abs(t.conf_sum - t.correct_sum).sum() / conf.size)


def peers(conf: np.ndarray, correct: np.ndarray) -> dict[str, tuple[str, Callable[[], float]]]:
    """Peer implementations found installed: name → (metric, function)."""
    out: dict[str, tuple[str, Callable[[], float]]] = {}
    try:
        from sklearn.calibration import calibration_curve  # type: ignore[import-not-found]
        from sklearn.metrics import roc_auc_score  # type: ignore[import-not-found]

        def sk_ece() -> float:
            prob_true, prob_pred = calibration_curve(correct, conf, n_bins=10, strategy="uniform")
            counts = np.histogram(conf, bins=10, range=(0.0, 1.0))[0]
            counts = counts[counts > 0]
            return float(np.sum(counts / conf.size * np.abs(prob_true - prob_pred)))

        out["sklearn calibration_curve + weighted sum"] = ("ECE", sk_ece)
        out["sklearn roc_auc_score"] = ("AUROC", lambda: float(roc_auc_score(correct, conf)))
    except ImportError:
        pass
    try:
        from netcal.metrics import ECE  # type: ignore[import-not-found]

        out["netcal ECE"] = ("ECE", lambda: float(ECE(bins=10).measure(conf, correct.astype(int))))
    except ImportError:
        pass
    try:
        import torch  # type: ignore[import-not-found]
        from torchmetrics.functional.classification import binary_calibration_error  # type: ignore[import-not-found]

        tc, ty = torch.from_numpy(conf), torch.from_numpy(correct.astype(np.int64))
        out["torchmetrics binary_calibration_error"] = (
            "ECE", lambda: float(binary_calibration_error(tc, ty, n_bins=10)))
    except ImportError:
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loop-resamples", type=int, default=10, help="plain-loop resamples timed (scaled to B)")
    args = ap.parse_args()
    n, b = args.n, args.resamples

    for label, verbal in (("continuous confidences (token-like)", False), ("5 % steps (verbal-like)", True)):
        conf, correct = synth(n, 0, verbal)

        def unit(c: np.ndarray = conf, y: np.ndarray = correct) -> tuple[float, float, float, object, object]:
            """What a report does for one group: one sort, every metric, the bootstrap intervals."""
            cpu0, t0 = time.process_time(), time.perf_counter()
            s = Sorted.of(*as_pairs(c, y))
            metrics = metrics_of_sorted(s, 10)
            t1 = time.perf_counter()
            ci = intervals_of_sorted(s, 10, resamples=b, seed=0)
            return t1 - t0, time.perf_counter() - t1, time.process_time() - cpu0, metrics, ci

        runs = [unit() for _ in range(args.repeat)]
        totals = [r[0] + r[1] for r in runs]
        cpu = statistics.median(r[2] for r in runs)
        med = statistics.median(totals)
        m_med = statistics.median(r[0] for r in runs)
        b_med = statistics.median(r[1] for r in runs)
        _, _, _, metrics, ci = runs[0]
        assert isinstance(metrics, CalibrationMetrics) and isinstance(ci, BootstrapIntervals)
        print(f"[{label}] {n:,} records, all metrics (both binnings) + {b:,} bootstrap resamples "
              f"(accuracy, ECE width+mass, Brier, AUROC):")
        print(f"  {med:.2f} s (median of {args.repeat}; {min(totals):.2f}–{max(totals):.2f}) = "
              f"{med / LIMIT_S:.2f} of the {LIMIT_S:.0f} s limit (process CPU {cpu:.2f} s)  [metrics {m_med:.2f} s, "
              f"bootstrap {b_med:.2f} s; {ci.cells} cells, exact={ci.exact}]")
        print(f"  ECE {metrics.width.ece:.4f} [{ci.ece_ci[0]:.4f}, {ci.ece_ci[1]:.4f}], "
              f"AUROC {metrics.auroc:.4f} [{ci.auroc_ci[0]:.4f}, {ci.auroc_ci[1]:.4f}]"
              if ci.auroc_ci is not None and metrics.auroc is not None else "")

        k = args.loop_resamples
        t0 = time.perf_counter()
        exact_bootstrap(conf, correct, resamples=k, seed=1)
        loop = (time.perf_counter() - t0) / k * b
        print(f"  plain loop of full resamples, same five metrics: {loop:.0f} s for {b:,} (timed on {k}, "
              f"scaled) → the cell bootstrap takes {b_med / loop:.2g} of that time")

    conf, correct = synth(n, 0, False)
    c, y = as_pairs(conf, correct)

    def probe_auroc() -> float:
        a = auroc(Sorted.of(c, y))
        return float("nan") if a is None else a

    ours: dict[str, Callable[[], float]] = {"ECE": lambda: numpy_ece(c, y), "AUROC": probe_auroc}
    ours_t = {k: timed(fn, 5)[0] for k, fn in ours.items()}
    print(f"single metrics on {n:,} records (median of 5): probe ECE (10 equal-width bins) "
          f"{ours_t['ECE'] * 1e3:.1f} ms = {ours['ECE']():.6f}; probe AUROC (incl. sort) "
          f"{ours_t['AUROC'] * 1e3:.1f} ms = {ours['AUROC']():.6f}")
    found = peers(conf, correct)
    if not found:
        print("  no peer library installed (sklearn, netcal, torchmetrics): no peer ratio")
    for name, (metric, fn) in found.items():
        t, *_ = timed(fn, 5)
        print(f"  {name} ({metric}): {t * 1e3:.1f} ms = {t / ours_t[metric]:.1f}× probe's time; "
              f"value {fn():.6f}")

if __name__ == "__main__":
    main()
