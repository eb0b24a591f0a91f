"""Runs and records written straight through Store, shaped like the runner's (for tests and bench).

Confidences are drawn per persona and correctness is drawn from a known calibration map, so the
figures have a known direction (overconfident really is overconfident); nologprobs has no token
or ptrue source, as a host without logprobs would record it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from probe.record import SOURCES, ConfidenceDetail, Record, Sampling
from probe.storage import RunInfo, Store, SuiteRef

PERSONAS = {"calibrated": 1.0, "overconfident": 2.6, "underconfident": 0.45, "nologprobs": 1.0}
VERBAL_LEVELS = np.array([0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0])


def _persona(model: str) -> str:
    name = model.split("/", 1)[-1].removeprefix("sim-")
    return name if name in PERSONAS else "calibrated"


def _confidences(rng: np.random.Generator, source: str, n: int) -> np.ndarray:
    if source == "verbal":
        return np.asarray(rng.choice(VERBAL_LEVELS, size=n))
    if source == "consistency":
        return np.asarray(rng.integers(1, 6, size=n) / 5.0)
    return np.asarray(np.clip(rng.beta(4.0, 1.6, size=n), 0.0, 1.0))


def synthetic_records(run_id: str, model: str, suite: str, items: int, variants: Sequence[str],
                      sources: Sequence[str], seed: int, sampling: Sampling,
                      reported: str | None = None, shift: float = 0.0) -> list[Record]:
    """Records of one model: one per (item, variant, source), two for verbal (numeric, linguistic).

    ``shift`` lowers every accuracy by that much (a model that got worse between runs)."""
    persona = _persona(model)
    power = PERSONAS[persona]
    rng = np.random.default_rng(seed)
    out: list[Record] = []
    for source in sources:
        forms = [f"{v}:numeric" for v in variants] + [f"{v}:linguistic" for v in variants] \
            if source == "verbal" else list(variants)
        for variant in forms:
            conf = _confidences(rng, source, items)
            p = np.clip(conf**power - shift, 0.0, 1.0)
            correct = rng.uniform(size=items) < p
            fail = rng.uniform(size=items)
            for i in range(items):
                base = {"run_id": run_id, "model": model, "provider": model.split("/")[0], "suite": suite,
                        "item_id": f"q{i:04d}", "variant": variant, "source": source, "sampling": sampling,
                        "model_reported": reported}
                if persona == "nologprobs" and source in ("token", "ptrue"):
                    out.append(Record(**base, status="unavailable:provider_has_none", answer="A"))
                elif fail[i] < 0.01:
                    out.append(Record(**base, status="error:rate_limit", error="429 after 4 attempts"))
                elif source == "verbal" and fail[i] < 0.03:
                    out.append(Record(**base, status="parse_error", answer="B",
                                      detail=ConfidenceDetail(raw_confidence="pretty sure")))
                else:
                    out.append(Record(**base, status="ok", answer="A", correct=bool(correct[i]),
                                      confidence=float(conf[i])))
    return out


def synthetic_run(store: Store, run_id: str, *, models: Sequence[str], items: int = 120,
                  variants: Sequence[str] = ("plain", "expert", "shuffled"),
                  sources: Sequence[str] = SOURCES, suite: str = "demo", fingerprint: str = "s1:demo0001",
                  seed: int = 0, temperature: float = 1.0, created_at: datetime | None = None,
                  reported: dict[str, str] | None = None, shift: dict[str, float] | None = None,
                  max_records: int | None = None) -> RunInfo:
    """Create a completed run with synthetic records in ``store`` (at most ``max_records``); returns its RunInfo."""
    created = created_at or datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    reported = reported if reported is not None else {m: f"{m.split('/')[-1]}-2025-01-01" for m in models}
    sampling = Sampling(temperature=temperature, top_logprobs=5, n=5)
    info = RunInfo(run_id=run_id, status="completed", created_at=created, started_at=created,
                   finished_at=created + timedelta(seconds=42), suites=[SuiteRef(name=suite, version="1",
                   fingerprint=fingerprint, questions=items)], models=list(models), sources=list(sources),
                   variants=list(variants), sampling=sampling, samples=5, probe_version="0.1.0",
                   model_ids={m: r for m, r in reported.items() if m in models},
                   planned_records=0)
    store.create_run(info)
    records = [r for k, model in enumerate(models)
               for r in synthetic_records(run_id, model, suite, items, variants, sources, seed * 1000 + k,
                                          sampling, reported.get(model), (shift or {}).get(model, 0.0))]
    store.put_records(records[:max_records])
    return info
