"""Fixtures: SQLite databases with synthetic runs (written through Store), and the CLI in-process."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from probe.cli import main
from probe.storage import Store

from ._synth import synthetic_run

Cli = Callable[..., tuple[int, str, str]]
DEMO_MODELS = ["sim/calibrated", "sim/overconfident", "sim/nologprobs"]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    def run(*argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["probe", *argv])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = int(e.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture(scope="module")
def synth_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rA: three models (nologprobs without token/ptrue); rB, rC: later runs of two of them, where rC
    has another temperature, a new reported id for sim/calibrated and a calibrated model that got worse;
    rOld: the same suite name with another fingerprint."""
    path = tmp_path_factory.mktemp("reports") / "probe.db"
    with Store(path) as store:
        synthetic_run(store, "rA", models=DEMO_MODELS, items=80)
        synthetic_run(store, "rB", models=DEMO_MODELS[:2], items=80, seed=1,
                      created_at=datetime(2025, 4, 1, tzinfo=UTC))
        synthetic_run(store, "rC", models=DEMO_MODELS[:2], items=80, seed=2, temperature=0.7,
                      created_at=datetime(2025, 5, 1, tzinfo=UTC), shift={"sim/calibrated": 0.3},
                      reported={"sim/calibrated": "calibrated-2025-05-01",
                                "sim/overconfident": "overconfident-2025-01-01"})
        synthetic_run(store, "rOld", models=DEMO_MODELS[:1], items=40, seed=3, fingerprint="s1:older",
                      created_at=datetime(2025, 1, 1, tzinfo=UTC))
    return path
