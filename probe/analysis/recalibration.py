"""Post-hoc recalibration: temperature scaling, Platt scaling, histogram binning, isotonic regression.

Every fitted map is monotone non-decreasing in the confidence, so it never reorders answers and
never changes which option is chosen. Temperature scaling on the option logits (when a record
carries its full option distribution) maps each distribution by softmax(log p / T): the order of
one record's options is kept, but its new confidence depends on the whole distribution, so the
ranking across records may move a little. The protocol (shared/calibration.md) fits on a seeded,
stratified calibration split and scores only on the held-out split, or cross-fits over K folds;
a recalibrated metric is never measured on the data it was fitted on.

Logits: confidences are clipped to [1e-12, 1 − 1e-12] before logit(p) (a verbalized "100 %" is
common and has no finite logit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from probe import __version__
from probe.analysis._arrays import ArrayLike, BoolArray, FloatArray, IntArray, as_pairs, split_sizes, wsum
from probe.analysis.metrics import CalibrationMetrics, calibration_metrics
from probe.record import Record, Sampling

Method = Literal["temperature", "platt", "histogram", "isotonic"]
METHODS: tuple[Method, ...] = ("temperature", "platt", "histogram", "isotonic")
LOGIT_CLIP = 1e-12
BETA_RANGE = (1e-3, 1e3)  # inverse temperature bounds
CALIBRATOR_FORMAT: Final = "probe-calibrator"
CALIBRATOR_VERSION: Final = 1


def logit(p: FloatArray) -> FloatArray:
    q = np.clip(p, LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.asarray(np.log(q) - np.log1p(-q), dtype=np.float64)


def sigmoid(z: FloatArray) -> FloatArray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)), dtype=np.float64)


# -- fitted maps --------------------------------------------------------------------------------

class TemperatureParams(BaseModel):
    """p' = σ(logit(p) / T) on one confidence, or softmax(log p / T) over the options."""

    model_config = ConfigDict(frozen=True)

    method: Literal["temperature"] = "temperature"
    temperature: float = Field(gt=0, description="T > 1 softens (fixes overconfidence), T < 1 sharpens.")
    on: Literal["logit_confidence", "option_logits"] = Field(
        default="logit_confidence", description="Fitted on logit(conf) or on the full option distribution.")

    def apply(self, conf: FloatArray) -> FloatArray:
        return sigmoid(logit(conf) / self.temperature)


class PlattParams(BaseModel):
    """p' = σ(a·logit(p) + b), a ≥ 0."""

    model_config = ConfigDict(frozen=True)

    method: Literal["platt"] = "platt"
    a: float = Field(ge=0, description="Slope on logit(conf) (kept ≥ 0 so the map is monotone).")
    b: float = Field(description="Intercept.")

    def apply(self, conf: FloatArray) -> FloatArray:
        return sigmoid(self.a * logit(conf) + self.b)


class HistogramParams(BaseModel):
    """p' = value of the bin p falls in; bins [lo_k, lo_{k+1}), values made monotone by PAV."""

    model_config = ConfigDict(frozen=True)

    method: Literal["histogram"] = "histogram"
    lower_edges: list[float] = Field(min_length=1, description="Lower edge of each bin (first is 0).")
    values: list[float] = Field(min_length=1, description="Calibrated value per bin.")

    def apply(self, conf: FloatArray) -> FloatArray:
        idx = np.searchsorted(np.asarray(self.lower_edges), conf, side="right") - 1
        return np.asarray(self.values, dtype=np.float64)[np.clip(idx, 0, len(self.values) - 1)]


class IsotonicParams(BaseModel):
    """Pool-adjacent-violators fit as knots; linear between knots, constant beyond the ends."""

    model_config = ConfigDict(frozen=True)

    method: Literal["isotonic"] = "isotonic"
    x: list[float] = Field(min_length=1, description="Knot confidences (increasing).")
    y: list[float] = Field(min_length=1, description="Calibrated value at each knot (non-decreasing).")

    def apply(self, conf: FloatArray) -> FloatArray:
        return np.asarray(np.interp(conf, np.asarray(self.x), np.asarray(self.y)), dtype=np.float64)


Params = Annotated[TemperatureParams | PlattParams | HistogramParams | IsotonicParams,
                   Field(discriminator="method")]


# -- fitting ------------------------------------------------------------------------------------

def _root_increasing(grad: Callable[[float], tuple[float, float]], lo: float, hi: float) -> float:
    """Zero of an increasing derivative on [lo, hi] (safeguarded Newton on a convex 1-D objective)."""
    g_lo, _ = grad(lo)
    if g_lo >= 0:
        return lo
    g_hi, _ = grad(hi)
    if g_hi <= 0:
        return hi
    x = min(max(1.0, lo), hi)
    for _ in range(100):
        g, h = grad(x)
        if abs(g) < 1e-10 * max(1.0, abs(x)):
            break
        if g > 0:
            hi = x
        else:
            lo = x
        step = x - g / h if h > 0 else np.nan
        x = step if lo < step < hi else float(np.sqrt(lo * hi))
        if hi - lo < 1e-12 * hi:
            break
    return x


def fit_temperature(conf: ArrayLike, correct: ArrayLike) -> TemperatureParams:
    """Temperature minimizing the NLL of σ(logit(p)/T); T bounded to [1e-3, 1e3]."""
    c, y = as_pairs(conf, correct)
    z = logit(c)

    def grad(beta: float) -> tuple[float, float]:
        p = sigmoid(beta * z)
        return float(np.sum((p - y) * z)), float(np.sum(p * (1.0 - p) * z * z))

    beta = _root_increasing(grad, *BETA_RANGE)
    return TemperatureParams(temperature=1.0 / beta, on="logit_confidence")


def _log_options(probs: ArrayLike) -> FloatArray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError("option probabilities must be an (n, K ≥ 2) array")
    if not np.all(np.isfinite(p)) or (p < 0).any() or (p > 1).any():
        raise ValueError("option probabilities must be finite and in [0, 1]")
    return np.asarray(np.log(np.clip(p, LOGIT_CLIP, 1.0)), dtype=np.float64)


def _softmax(z: FloatArray) -> FloatArray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)


def _option_grad(blocks: Sequence[tuple[FloatArray, IntArray]]) -> Callable[[float], tuple[float, float]]:
    """d/dβ and d²/dβ² of the NLL of softmax(β·log p) at the labels, summed over blocks of equal K."""
    def grad(beta: float) -> tuple[float, float]:
        g = h = 0.0
        for lp, lab in blocks:
            q = _softmax(beta * lp)
            mean = (q * lp).sum(axis=1)
            var = (q * lp * lp).sum(axis=1) - mean * mean
            g += float(np.sum(mean - lp[np.arange(lp.shape[0]), lab]))
            h += float(np.sum(np.maximum(var, 0.0)))
        return g, h
    return grad


def fit_temperature_options(probs: ArrayLike, label: ArrayLike) -> TemperatureParams:
    """Temperature over the full option distribution: minimizes NLL of softmax(log p / T) at the label."""
    lp = _log_options(probs)
    lab = np.asarray(label, dtype=np.int64)
    if lab.shape != (lp.shape[0],) or (lab < 0).any() or (lab >= lp.shape[1]).any():
        raise ValueError("label must hold one option index per row")
    beta = _root_increasing(_option_grad([(lp, lab)]), *BETA_RANGE)
    return TemperatureParams(temperature=1.0 / beta, on="option_logits")


def apply_temperature_options(probs: ArrayLike, params: TemperatureParams) -> FloatArray:
    """softmax(log p / T) row by row; the arg-max option never changes."""
    return _softmax(_log_options(probs) / params.temperature)


class OptionRows:
    """Option distributions of possibly different lengths (a run may mix 4- and 5-option questions),
    held as one (n_K, K) log-probability block per option count K. Scaling a row does not change
    softmax(log p / T), so rows need not sum to exactly 1."""

    def __init__(self, rows: Sequence[Sequence[float]]) -> None:
        by_k: dict[int, list[int]] = {}
        for i, row in enumerate(rows):
            by_k.setdefault(len(row), []).append(i)
        self.n = len(rows)
        self.sizes = np.array([len(r) for r in rows], dtype=np.int64)
        self.blocks: list[tuple[IntArray, FloatArray]] = []
        for _, idx in sorted(by_k.items()):
            lp = _log_options([list(rows[i]) for i in idx])
            if (np.exp(lp).sum(axis=1) <= 1e-9).any():
                raise ValueError("an option distribution has no mass")
            self.blocks.append((np.asarray(idx, dtype=np.int64), lp))

    def check_index(self, index: ArrayLike, what: str) -> IntArray:
        """``index`` as one valid option index per row (ValueError otherwise)."""
        ix = np.asarray(index, dtype=np.int64)
        if ix.shape != (self.n,) or (ix < 0).any() or (ix >= self.sizes).any():
            raise ValueError(f"{what} must hold one option index per row, within the row's options")
        return ix

    def fit(self, label: IntArray, mask: BoolArray) -> TemperatureParams:
        """Option-logit temperature fitted on the rows in ``mask`` (labels: option index per row)."""
        blocks = [(lp[m], label[idx[m]]) for idx, lp in self.blocks if (m := mask[idx]).any()]
        beta = _root_increasing(_option_grad(blocks), *BETA_RANGE)
        return TemperatureParams(temperature=1.0 / beta, on="option_logits")

    def confidence(self, params: TemperatureParams, pick: IntArray, mask: BoolArray) -> FloatArray:
        """Recalibrated probability of option ``pick`` in each row of ``mask`` (in row order)."""
        out = np.full(self.n, np.nan)
        for idx, lp in self.blocks:
            m = mask[idx]
            q = _softmax(lp[m] / params.temperature)
            out[idx[m]] = q[np.arange(q.shape[0]), pick[idx[m]]]
        return np.asarray(out[mask], dtype=np.float64)


def fit_platt(conf: ArrayLike, correct: ArrayLike) -> PlattParams:
    """Platt (1999) logistic fit on logit(conf) with his smoothed targets; slope kept ≥ 0."""
    c, y = as_pairs(conf, correct)
    x = logit(c)
    n_pos = float(y.sum())
    n_neg = float(y.size - n_pos)
    t = np.where(y == 1.0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def loss(a: float, b: float) -> float:
        z = a * x + b
        return float(np.sum(np.logaddexp(0.0, z) - t * z))

    a, b = 1.0, 0.0
    for _ in range(100):
        p = sigmoid(a * x + b)
        r = p - t
        g = np.array([np.sum(r * x), np.sum(r)])
        w = p * (1.0 - p)
        h = np.array([[np.sum(w * x * x), np.sum(w * x)], [np.sum(w * x), np.sum(w)]]) + 1e-12 * np.eye(2)
        if np.max(np.abs(g)) < 1e-9 * y.size:
            break
        step = np.linalg.solve(h, g)
        f0, scale = loss(a, b), 1.0
        while scale > 1e-10 and loss(a - scale * step[0], b - scale * step[1]) > f0:
            scale /= 2.0
        a, b = a - scale * float(step[0]), b - scale * float(step[1])
    if a < 0.0:  # anti-informative confidence: the best monotone map is a constant
        a, b = 0.0, float(logit(np.array([t.mean()]))[0])
    return PlattParams(a=a, b=b)


def pav(y: FloatArray, w: FloatArray) -> tuple[FloatArray, IntArray]:
    """Pool-adjacent-violators: non-decreasing block means of ``y`` (weights ``w``) and block sizes.

    A sequential stack over the points given (callers pass distinct confidence values, not records).
    """
    means: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    for yi, wi in zip(y.tolist(), w.tolist(), strict=True):
        m, ww, k = yi, wi, 1
        while means and means[-1] >= m:
            pm, pw, pk = means.pop(), weights.pop(), sizes.pop()
            m, ww, k = (pm * pw + m * ww) / (pw + ww), pw + ww, pk + k
        means.append(m)
        weights.append(ww)
        sizes.append(k)
    return np.asarray(means, dtype=np.float64), np.asarray(sizes, dtype=np.int64)


def fit_isotonic(conf: ArrayLike, correct: ArrayLike) -> IsotonicParams:
    """Isotonic regression of correct on confidence (PAV over distinct confidences)."""
    c, y = as_pairs(conf, correct)
    values, inverse, counts = np.unique(c, return_inverse=True, return_counts=True)
    acc = wsum(inverse.ravel(), y, values.size) / counts
    means, sizes = pav(acc, counts.astype(np.float64))
    ends = np.cumsum(sizes)
    starts = ends - sizes
    x_lo, x_hi = values[starts], values[ends - 1]
    xs = np.stack([x_lo, x_hi], axis=1).ravel()
    ys = np.repeat(means, 2)
    keep = np.concatenate([[True], xs[1:] > xs[:-1]])  # single-value blocks give one knot
    return IsotonicParams(x=xs[keep].tolist(), y=ys[keep].tolist())


def fit_histogram(conf: ArrayLike, correct: ArrayLike, bins: int = 10) -> HistogramParams:
    """Histogram binning (Zadrozny & Elkan 2001) over equal-mass bins; bin values made monotone by PAV."""
    c, y = as_pairs(conf, correct)
    order = np.argsort(c, kind="stable")
    cs, ys = c[order], y[order]
    sizes = split_sizes(c.size, bins)
    starts = (np.cumsum(sizes) - sizes)[sizes > 0]
    lows = np.unique(cs[starts])  # ties never straddle two bins
    lows[0] = 0.0
    idx = np.searchsorted(lows, cs, side="right") - 1
    n = np.bincount(idx, minlength=lows.size).astype(np.float64)
    acc = wsum(idx, ys, lows.size) / n
    means, block = pav(acc, n)
    return HistogramParams(lower_edges=lows.tolist(), values=np.repeat(means, block).tolist())


def fit(method: Method, conf: FloatArray, correct: FloatArray, bins: int = 10) -> Params:
    if method == "temperature":
        return fit_temperature(conf, correct)
    if method == "platt":
        return fit_platt(conf, correct)
    if method == "histogram":
        return fit_histogram(conf, correct, bins)
    if method == "isotonic":
        return fit_isotonic(conf, correct)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


# -- protocol -----------------------------------------------------------------------------------

def _units(n: int, correct: FloatArray, groups: ArrayLike | None) -> tuple[IntArray, FloatArray]:
    """Unit of each record (its item, or itself) and each unit's stratum (mean correct ≥ 0.5)."""
    if groups is None:
        return np.arange(n, dtype=np.int64), correct
    g = np.asarray(groups)
    if g.shape != (n,):
        raise ValueError("groups must have one entry per record")
    _, unit = np.unique(g, return_inverse=True)
    unit = unit.ravel().astype(np.int64)
    k = int(unit.max()) + 1
    mean = wsum(unit, correct, k) / np.bincount(unit, minlength=k)
    return unit, (mean >= 0.5).astype(np.float64)


def _permuted_strata(strata: FloatArray, rng: np.random.Generator) -> list[IntArray]:
    return [rng.permutation(np.flatnonzero(strata == s)) for s in (0.0, 1.0)]


def stratified_split(correct: ArrayLike, fraction: float = 0.5, seed: int = 0,
                     groups: ArrayLike | None = None) -> FloatArray:
    """Mask (1.0 = calibration, 0.0 = held out), stratified by correctness, seeded.

    With ``groups`` (e.g. item ids) all records of a group land on the same side, stratified by
    the group's majority correctness, so repeated samples of an item never straddle the split.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"split fraction must be in (0, 1) (got {fraction})")
    y = np.asarray(correct, dtype=np.float64)
    unit, strata = _units(y.size, y, groups)
    rng = np.random.default_rng(seed)
    in_cal = np.zeros(strata.size, dtype=np.float64)
    for members in _permuted_strata(strata, rng):
        take = int(np.floor(fraction * members.size + 0.5))
        in_cal[members[:take]] = 1.0
    mask = in_cal[unit]
    if mask.all() or not mask.any():
        raise ValueError(f"too few records ({y.size}) to split into calibration and held-out parts")
    return mask


def kfold_assign(correct: ArrayLike, folds: int, seed: int = 0, groups: ArrayLike | None = None) -> IntArray:
    """Fold (0..K−1) of each record, stratified by correctness, seeded (groups kept together)."""
    if folds < 2:
        raise ValueError(f"folds must be at least 2 (got {folds})")
    y = np.asarray(correct, dtype=np.float64)
    unit, strata = _units(y.size, y, groups)
    if strata.size < folds:
        raise ValueError(f"too few records or items ({strata.size}) for {folds} folds")
    rng = np.random.default_rng(seed)
    fold = np.zeros(strata.size, dtype=np.int64)
    offset = 0
    for members in _permuted_strata(strata, rng):
        fold[members] = (np.arange(members.size) + offset) % folds
        offset += members.size
    return fold[unit]


class HeldOutScores(BaseModel):
    """Metrics on held-out records only."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="Held-out records scored.")
    accuracy: float = Field(description="Accuracy (recalibration does not change it).")
    ece: float = Field(description="ECE, equal-width bins.")
    ece_mass: float = Field(description="ECE, equal-mass bins.")
    mce: float = Field(description="MCE, equal-width bins.")
    brier: float = Field(description="Brier score.")
    nll: float = Field(description="NLL (clipped).")
    auroc: float | None = Field(description="AUROC (null when undefined).")

    @classmethod
    def of(cls, m: CalibrationMetrics) -> HeldOutScores:
        return cls(n=m.n, accuracy=m.accuracy, ece=m.width.ece, ece_mass=m.mass.ece, mce=m.width.mce,
                   brier=m.brier, nll=m.nll, auroc=m.auroc)


class Protocol(BaseModel):
    """How the calibrator was fitted and scored."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["split", "folds"] = Field(description="Calibration split or K-fold cross-fitting.")
    fraction: float | None = Field(default=None, description="split: share of records used to fit.")
    folds: int | None = Field(default=None, description="folds: K.")
    seed: int = Field(description="Seed of the split.")
    by_item: bool = Field(description="Records of one item were kept on one side.")


class HeldOutResult(BaseModel):
    """Before/after metrics measured only on data the calibrator was not fitted on."""

    model_config = ConfigDict(frozen=True)

    method: Method = Field(description="Recalibration method.")
    protocol: Protocol = Field(description="Fitting protocol.")
    params: Params = Field(description="Parameters of the exported calibrator.")
    n_fit: int = Field(description="Records the exported calibrator was fitted on.")
    n_fit_correct: int = Field(description="Of those, correct.")
    before: HeldOutScores = Field(description="Raw confidences on the held-out records.")
    after: HeldOutScores = Field(description="Recalibrated confidences on the same records.")
    note: str = Field(description="What the figures mean.")


FitOn = Callable[[BoolArray], Params]
ApplyOn = Callable[[Params, BoolArray], FloatArray]


def _held_out(method: Method, c: FloatArray, y: FloatArray, fit_on: FitOn, apply_on: ApplyOn, *,
              fraction: float | None, folds: int | None, seed: int, groups: ArrayLike | None,
              bins: int) -> HeldOutResult:
    """The protocol: ``fit_on(mask)`` fits on the records in the mask, ``apply_on(params, mask)``
    recalibrates the records in the mask; scores are taken on records the map was not fitted on."""
    by_item = groups is not None
    if folds is not None:
        fold = kfold_assign(y, folds, seed, groups)
        out = np.empty_like(c)
        for k in range(folds):  # one fit per fold
            test = fold == k
            out[test] = apply_on(fit_on(~test), test)
        params = fit_on(np.ones(c.size, dtype=np.bool_))
        return HeldOutResult(
            method=method, protocol=Protocol(kind="folds", folds=folds, seed=seed, by_item=by_item),
            params=params, n_fit=int(c.size), n_fit_correct=int(y.sum()),
            before=HeldOutScores.of(calibration_metrics(c, y, bins)),
            after=HeldOutScores.of(calibration_metrics(out, y, bins)),
            note=f"cross-fitted: every record scored by a calibrator fitted on the other {folds - 1} folds; "
                 "the exported calibrator is refitted on all records",
        )
    if fraction is None:
        raise ValueError("give a split fraction or a number of folds")
    mask = stratified_split(y, fraction, seed, groups) == 1.0
    params = fit_on(mask)
    held = ~mask
    return HeldOutResult(
        method=method, protocol=Protocol(kind="split", fraction=fraction, seed=seed, by_item=by_item),
        params=params, n_fit=int(mask.sum()), n_fit_correct=int(y[mask].sum()),
        before=HeldOutScores.of(calibration_metrics(c[held], y[held], bins)),
        after=HeldOutScores.of(calibration_metrics(apply_on(params, held), y[held], bins)),
        note="fitted on the calibration split, scored on the held-out split only; the exported "
             "calibrator is the one fitted on the calibration split",
    )


def evaluate(method: Method, conf: ArrayLike, correct: ArrayLike, *, fraction: float | None = 0.5,
             folds: int | None = None, seed: int = 0, groups: ArrayLike | None = None,
             bins: int = 10) -> HeldOutResult:
    """Fit ``method`` and score it on held-out data (split, or cross-fitted over ``folds``)."""
    c, y = as_pairs(conf, correct)
    return _held_out(method, c, y, lambda m: fit(method, c[m], y[m], bins), lambda p, m: p.apply(c[m]),
                     fraction=fraction, folds=folds, seed=seed, groups=groups, bins=bins)


def evaluate_options(probs: Sequence[Sequence[float]], label: ArrayLike, answered: ArrayLike,
                     conf: ArrayLike, correct: ArrayLike, *, fraction: float | None = 0.5,
                     folds: int | None = None, seed: int = 0, groups: ArrayLike | None = None,
                     bins: int = 10) -> HeldOutResult:
    """Temperature scaling on the option logits, under the same held-out protocol as ``evaluate``.

    Row i of ``probs`` is record i's option distribution; ``label`` the correct option (the fit's
    target), ``answered`` the option the model answered. ``conf`` (the raw confidence) and
    ``correct`` are what is scored: before = ``conf``, after = the recalibrated probability of the
    answered option. softmax(log p / T) keeps the order of the options, so no answer changes.
    """
    c, y = as_pairs(conf, correct)
    rows = OptionRows(probs)
    if rows.n != c.size:
        raise ValueError(f"option distributions and confidences differ in length ({rows.n} vs {c.size})")
    lab = rows.check_index(label, "label")
    pick = rows.check_index(answered, "answered")
    result = _held_out("temperature", c, y, lambda m: rows.fit(lab, m),
                       lambda p, m: rows.confidence(_temp(p), pick, m),
                       fraction=fraction, folds=folds, seed=seed, groups=groups, bins=bins)
    return result.model_copy(update={"note": result.note + "; on the option logits a record's recalibrated "
                                     "confidence depends on its whole option distribution, so the ranking of "
                                     "records (AUROC) may move a little, but no answer changes"})


def option_confidence(probs: Sequence[Sequence[float]], pick: ArrayLike, params: TemperatureParams) -> FloatArray:
    """Recalibrated probability of option ``pick[i]`` in distribution ``probs[i]`` (rows may differ in K)."""
    rows = OptionRows(probs)
    return rows.confidence(params, rows.check_index(pick, "pick"), np.ones(rows.n, dtype=np.bool_))


def _temp(params: Params) -> TemperatureParams:
    assert isinstance(params, TemperatureParams)
    return params


OptionInputs = tuple[list[tuple[float, ...]], list[int], list[int]]


def option_inputs(scored: Sequence[Record]) -> OptionInputs | str:
    """(option distributions, correct options, answered options) of scored records, or why not.

    The answered option is the stored one; a record that lacks it (but has the distribution and
    the correct option) is taken to have answered its most probable option.
    """
    if not scored:
        return "no scored records"
    probs: list[tuple[float, ...]] = []
    label: list[int] = []
    answered: list[int] = []
    outside = unknown = 0
    for r in scored:
        d = r.detail
        if d.option_probs is None or d.correct_option is None:
            if d.outside_topk:
                outside += 1
            else:
                unknown += 1
            continue
        probs.append(d.option_probs)
        label.append(d.correct_option)
        answered.append(d.answered_option if d.answered_option is not None
                        else int(np.argmax(np.asarray(d.option_probs))))
    missing = outside + unknown
    if missing:
        why = []
        if outside:
            why.append(f"{outside} had an option outside the top-k")
        if unknown:
            why.append(f"{unknown} without option data (short answers, a source other than token, or "
                       "records written before probe stored it)")
        return f"{missing} of {len(scored)} scored records lack the full option distribution: {'; '.join(why)}"
    return probs, label, answered


# -- the exported file ----------------------------------------------------------------------------

class FittedOn(BaseModel):
    """The data a calibrator was fitted on."""

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(description="Run the records came from.")
    suites: list[str] = Field(description="Suites of those records.")
    model: str = Field(description="provider/model.")
    source: str = Field(description="Confidence source.")
    variant: str = Field(description="Prompt variant ('*' = all variants pooled).")
    n: int = Field(description="Records the calibrator was fitted on.")
    n_correct: int = Field(description="Of those, correct.")
    protocol: Protocol = Field(description="How it was fitted and scored.")
    sampling: list[Sampling] = Field(default_factory=list, description="Sampling parameters of the records.")


class Calibrator(BaseModel):
    """A fitted recalibration map, exported as versioned JSON."""

    model_config = ConfigDict(frozen=True)

    format: Literal["probe-calibrator"] = Field(default=CALIBRATOR_FORMAT, description="File type marker.")
    version: Literal[1] = Field(default=CALIBRATOR_VERSION, description="File format version.")
    method: Method = Field(description="Recalibration method.")
    params: Params = Field(description="Fitted parameters.")
    fitted_on: FittedOn = Field(description="What it was fitted on.")
    held_out: HeldOutResult | None = Field(default=None, description="Held-out before/after figures at fit time.")
    form_note: str | None = Field(
        default=None, description="temperature: which form was fitted (option logits or logit(conf)) and why.")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="When it was fitted.")
    probe_version: str = Field(default=__version__, description="probe version that fitted it.")

    def apply(self, conf: ArrayLike) -> FloatArray:
        """Calibrated confidences (input checked: finite, in [0, 1])."""
        c, _ = as_pairs(conf, np.zeros(np.asarray(conf).shape), allow_empty=True)
        if self.params.method == "temperature" and self.params.on == "option_logits":
            raise ValueError("this temperature was fitted on full option distributions; "
                             "apply it with apply_temperature_options")
        return np.clip(self.params.apply(c), 0.0, 1.0)
