"""Synthetic runs for the analysis tests.

``overconfident_records`` stands in for a run of the simulator's ``overconfident`` persona: the
true probability of being right is p and the model reports σ(2.5·logit p). To run the same
tests on a real simulator run, make the ``overconfident_run`` fixture return the (RunInfo,
records) of ``probe run --model sim/overconfident`` read back through probe.storage.Store.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from probe.cli import main
from probe.record import Record, Sampling
from probe.storage import RunInfo, Store, SuiteRef

MODEL = "sim/overconfident"


def make_record(run_id: str, item: int, conf: float | None, correct: bool | None, *, variant: str = "plain",
                source: str = "token", status: str = "ok", model: str = MODEL, sample: int = 0,
                suite: str = "synthetic", sampling: Sampling | None = None) -> Record:
    return Record(run_id=run_id, model=model, provider=model.split("/")[0], suite=suite, item_id=f"q{item:05d}",
                  variant=variant, source=source, sample=sample, answer="A", correct=correct,  # type: ignore[arg-type]
                  confidence=conf, status=status, sampling=sampling or Sampling())


def overconfident_records(run_id: str, n_items: int, seed: int, *, variants: tuple[str, ...] = ("plain",),
                          sharpen: float = 2.5, error_rate: float = 0.0) -> list[Record]:
    """Items with true P(correct) = p ~ Beta(4, 2), reported confidence σ(sharpen · logit p)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(4, 2, n_items)
    conf = 1.0 / (1.0 + np.exp(-sharpen * np.log(p / (1.0 - p))))
    out: list[Record] = []
    for v in variants:
        correct = rng.random(n_items) < p
        failed = rng.random(n_items) < error_rate
        for i in range(n_items):
            if failed[i]:
                out.append(make_record(run_id, i, None, None, variant=v, status="error:rate_limit"))
            else:
                out.append(make_record(run_id, i, float(conf[i]), bool(correct[i]), variant=v))
    return out


def run_info(run_id: str, models: tuple[str, ...] = (MODEL,)) -> RunInfo:
    return RunInfo(run_id=run_id, status="completed", models=list(models),
                   suites=[SuiteRef(name="synthetic", version="1", fingerprint="t1:synthetic")],
                   sources=["token"], variants=["plain"])


@pytest.fixture
def overconfident_run() -> tuple[RunInfo, list[Record]]:
    """A run of an overconfident model: 1,500 items, two variants, 2 % rate-limit errors."""
    return run_info("over-1"), overconfident_records("over-1", 1500, seed=1, variants=("plain", "expert"),
                                                     error_rate=0.02)


@pytest.fixture
def store_factory(tmp_path: Path) -> Iterator[Callable[[RunInfo, list[Record]], Path]]:
    """Write runs into a real SQLite database through probe.storage.Store; returns its path."""
    db = tmp_path / "probe.db"
    stores: list[Store] = []

    def add(info: RunInfo, records: list[Record]) -> Path:
        store = Store(db)
        stores.append(store)
        store.create_run(info)
        store.put_records(records)
        return db

    yield add
    for s in stores:
        s.close()


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run the probe command line in-process: (exit code, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["probe", *argv])
        with pytest.raises(SystemExit) as e:
            main()
        out = capsys.readouterr()
        return int(e.value.code or 0), out.out, out.err

    return run
