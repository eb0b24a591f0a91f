"""Drift findings (pure), alert storage, and webhook delivery with retries over real loopback HTTP."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from tenacity import wait_none

from probe.record import Record
from probe.service.alerts import (
    DriftSettings,
    WebhookPayload,
    deliver,
    drift_findings,
    list_alerts,
    set_webhook_status,
    store_alerts,
)
from probe.storage import RunInfo, Store
from tests.service._helpers import WebhookReceiver, free_port

MODEL = "sim/calibrated"
NOW = datetime(2025, 1, 6, tzinfo=UTC)
FAST = DriftSettings(resamples=400)


def records(run_id: str, conf: np.ndarray, correct: np.ndarray, source: str = "token",
            variant: str = "plain") -> list[Record]:
    return [Record(run_id=run_id, model=MODEL, provider="sim", suite="s", item_id=f"q{i}", variant=variant,
                   source=source, status="ok", confidence=float(c), correct=bool(y))  # type: ignore[arg-type]
            for i, (c, y) in enumerate(zip(conf, correct, strict=True))]


def run(run_id: str, reported: str = "m-v1") -> RunInfo:
    return RunInfo(run_id=run_id, status="completed", models=[MODEL], model_ids={MODEL: reported})


def calibrated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.3, 1.0, n)
    return conf, rng.uniform(size=n) < conf


def test_no_finding_between_equal_runs() -> None:
    conf, y = calibrated(400, 1)
    assert drift_findings(run("a"), records("a", conf, y), run("b"), records("b", conf, y), FAST) == []


def test_overconfidence_beyond_the_interval_is_an_ece_finding() -> None:
    conf, y = calibrated(600, 2)
    after = np.clip(conf + 0.25, 0, 1)  # same answers, inflated confidence
    (f,) = drift_findings(run("a"), records("a", conf, y), run("b"), records("b", after, y), FAST)
    assert (f.kind, f.model, f.source, f.variant, f.items) == ("ece", MODEL, "token", "plain", 600)
    assert f.difference is not None and f.ci is not None and f.current is not None and f.previous is not None
    assert f.ci[0] > 0 and f.difference == f.current - f.previous  # type: ignore[operator]
    assert "ece" in f.message and "600 items" in f.message


def test_an_accuracy_drop_is_an_accuracy_finding() -> None:
    conf, y = calibrated(600, 3)
    worse = y.copy()
    worse[: 200] = False  # a third of the items now wrong
    found = drift_findings(run("a"), records("a", conf, y), run("b"), records("b", conf, worse), FAST)
    acc = next(f for f in found if f.kind == "accuracy")
    assert acc.difference is not None and acc.difference < 0 and acc.ci is not None and acc.ci[1] < 0


def test_noise_within_the_interval_is_not_drift() -> None:
    conf, y = calibrated(300, 4)
    rng = np.random.default_rng(5)
    jitter = np.clip(conf + rng.normal(0, 0.01, conf.size), 0, 1)
    assert drift_findings(run("a"), records("a", conf, y), run("b"), records("b", jitter, y), FAST) == []


def test_a_changed_reported_model_id_is_a_finding_even_with_equal_figures() -> None:
    conf, y = calibrated(100, 6)
    (f,) = drift_findings(run("a", "m-v1"), records("a", conf, y), run("b", "m-v2"), records("b", conf, y), FAST)
    assert (f.kind, f.previous, f.current) == ("model_id", "m-v1", "m-v2")


def test_only_scored_records_on_shared_items_and_groups_are_compared() -> None:
    conf, y = calibrated(200, 7)
    prev = records("a", conf, y)
    # the new run failed on every item of another source and has a group the old one lacks: no finding
    failed = [r.model_copy(update={"status": "error:rate_limit", "confidence": None, "correct": None}) for r in prev]
    extra = records("b", conf, y, source="verbal", variant="plain:numeric")
    assert drift_findings(run("a"), prev, run("b"), failed + extra, FAST) == []


def test_alerts_are_stored_listed_and_marked(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    conf, y = calibrated(100, 8)
    findings = drift_findings(run("a", "x"), records("a", conf, y), run("b", "y"), records("b", conf, y), FAST)
    alerts = store_alerts(store, findings, schedule_id="s1", run_id="b", previous_run_id="a", now=NOW)
    set_webhook_status(store, [a.alert_id for a in alerts], "delivered")
    total, listed = list_alerts(store)
    assert total == 1 and listed[0].alert_id == alerts[0].alert_id and listed[0].webhook_status == "delivered"
    assert list_alerts(store, schedule_id="other") == (0, [])
    assert list_alerts(store, run_id="b")[0] == 1


def payload() -> WebhookPayload:
    return WebhookPayload(schedule_id="s1", run_id="b", previous_run_id="a", alerts=[])


def test_webhook_retries_server_errors_then_delivers() -> None:
    receiver = WebhookReceiver(fail_first=2)
    with receiver.serve() as url:
        status = asyncio.run(deliver(url, payload(), attempts=4, wait=wait_none()))
    assert status == "delivered"
    assert receiver.attempts == 3
    assert receiver.bodies == [payload().model_dump(mode="json")]


def test_webhook_gives_up_after_the_attempts_and_does_not_retry_a_4xx() -> None:
    failing = WebhookReceiver(fail_first=10)
    with failing.serve() as url:
        assert asyncio.run(deliver(url, payload(), attempts=3, wait=wait_none())) == \
            "failed: HTTP 500 after 3 attempts"
    assert failing.attempts == 3
    gone = WebhookReceiver(status=410)
    with gone.serve() as url:
        assert asyncio.run(deliver(url, payload(), attempts=3, wait=wait_none())) == "failed: HTTP 410"
    assert gone.attempts == 1
    refused = asyncio.run(deliver(f"http://127.0.0.1:{free_port()}/hook", payload(), attempts=2, wait=wait_none()))
    assert refused.startswith("failed: ClientConnectorError")
