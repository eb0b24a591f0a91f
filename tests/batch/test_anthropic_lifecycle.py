"""Anthropic Message Batches life cycle through the official SDK (respx): create, in progress, ended with
succeeded / errored / expired / canceled results out of order; the records equal a live run of the same plan
against the same canned answers (live Messages calls through the same SDK, also on respx)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import respx

from probe.batch import BatchStore
from probe.record import Record
from probe.runner.run import Plan, new_run
from probe.storage import Store
from tests.batch.conftest import assert_same_records, by_key, plan_for
from tests.batch.fakevendor import FakeVendor, every_nth
from tests.batch.test_openai_lifecycle import _batch, _live

BASE = "http://anthropic.test"
MODEL = "anthropic/claude-sonnet-4-6"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVendor]:
    vendor = FakeVendor(fail=every_nth(errored=11, expired=11, canceled=11),
                        reject_temperature=frozenset({"claude-opus-4-8"}))
    vendor.base_url = BASE
    monkeypatch.setenv("ANTHROPIC_BASE_URL", BASE)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        router.route().mock(side_effect=vendor.respx_handler)
        yield vendor


def _live_records(plan: Plan, tmp_path: Path) -> list[Record]:
    store = Store(tmp_path / "live.db")
    info = asyncio.run(_live(plan, store, new_run(plan, store)))
    assert info.status == "completed"
    return store.records(info.run_id)


def test_life_cycle_with_failed_lines_and_records_equal_live(fake: FakeVendor, tmp_path: Path) -> None:
    plan = plan_for(MODEL)
    live = _live_records(plan, tmp_path)
    live_calls = fake.calls["live:anthropic"]
    # no logprobs: one answer, two verbal forms, three consistency samples (no n) per item; no self-evaluation
    assert live_calls == 6 * 6

    store = Store(tmp_path / "batch.db")
    info = new_run(plan, store)
    reports = asyncio.run(_batch(plan, store, info, [MODEL], None))
    assert fake.calls["live:anthropic"] == live_calls  # nothing was sent live
    first = reports[0]
    assert [b.requests for b in first.submitted] == [36] and first.records_written == 0
    (sent,) = fake.anthropic_inputs.values()
    assert all(set(r) == {"custom_id", "params"} for r in sent)
    assert all(r["params"]["model"] == "claude-sonnet-4-6" and "temperature" in r["params"] for r in sent)
    assert len({r["custom_id"] for r in sent}) == 36  # the three identical consistency requests differ by key
    assert reports[1].in_flight and reports[1].in_flight[0].vendor_status == "in_progress"
    assert reports[2].collected and reports[2].complete  # one stage: no self-evaluation without logprobs
    outcomes = reports[2].collected[0].outcomes
    assert outcomes["ok"] < 36 and {"error:expired", "error:canceled", "error:transient"} <= set(outcomes)

    got = store.records(info.run_id)
    statuses = Counter(r.status for r in got)
    assert statuses["error:expired"] and statuses["error:canceled"] and statuses["error:transient"]
    errored = [r for r in got if r.status == "error:transient"]
    assert all((r.error or "").startswith("batch line errored [api_error]") for r in errored)
    want, have = by_key(live), by_key(got)
    answered = [k for k, r in have.items() if not r["status"].startswith("error:")]
    assert answered and all(have[k] == want[k] for k in answered)
    assert store.get_run(info.run_id).model_ids == {MODEL: "claude-sonnet-4-6-20250929"}

    # retried live: identical to the live run
    asyncio.run(_live(plan, store, store.get_run(info.run_id)))
    assert_same_records(store.records(info.run_id), live)


def test_retry_failed_lines_in_a_new_batch(fake: FakeVendor, tmp_path: Path) -> None:
    """probe run --resume RUN_ID --batch: failed lines go out again in a new batch, not live."""
    plan = plan_for(MODEL, limit=4, sources="verbal")
    live = _live_records(plan, tmp_path)
    store = Store(tmp_path / "batch.db")
    info = new_run(plan, store)
    asyncio.run(_batch(plan, store, info, [MODEL], None))
    failed = [r for r in store.records(info.run_id) if r.status.startswith("error:")]
    assert failed
    fake.fail = lambda _cid: None
    live_calls = fake.calls["live:anthropic"]
    from probe.batch import start
    from probe.runner.run import close_providers, open_providers

    async def again() -> None:
        providers = open_providers(plan.spec)
        try:
            first = await start(plan, store, store.get_run(info.run_id), providers, [MODEL], retry_failed=True)
            assert [b.requests for b in first.submitted] == [len(failed)]
            from probe.batch import advance

            while not (await advance(plan, store, info.run_id, providers, [MODEL])).complete:
                pass
        finally:
            await close_providers(providers)

    asyncio.run(again())
    assert fake.calls["live:anthropic"] == live_calls
    assert_same_records(store.records(info.run_id), live)


def test_rejected_temperature_is_dropped_and_resubmitted(fake: FakeVendor, tmp_path: Path) -> None:
    """An errored line rejecting `temperature` is learned, like the live adapter's drop-and-resend."""
    model = "anthropic/claude-opus-4-8"
    # concurrency 1: the live adapter learns the rejection on its first call before sending the next one
    plan = plan_for(model, limit=3, sources="verbal,token", concurrency=1)
    fake.fail = lambda _cid: None
    live = _live_records(plan, tmp_path)
    store = Store(tmp_path / "batch.db")
    info = new_run(plan, store)
    reports = asyncio.run(_batch(plan, store, info, [model], None))
    assert reports[-1].complete
    assert BatchStore(store).learned(info.run_id, model) == (False, ("temperature",))
    inputs = list(fake.anthropic_inputs.values())
    assert len(inputs) == 2 and all("temperature" not in r["params"] for r in inputs[1])
    assert_same_records(store.records(info.run_id), live)


def test_mixed_run_batch_models_and_live_models(fake: FakeVendor, tmp_path: Path) -> None:
    """batch = true on one model of a run.toml: that model is submitted, the other is called live at once."""
    fake.fail = lambda _cid: None
    models = [{"model": MODEL, "batch": True}, "anthropic/claude-haiku-4-5"]
    plan = plan_for("anthropic/unused", limit=2, sources="verbal", models=models)
    live = _live_records(plan, tmp_path)
    live_calls = fake.calls["live:anthropic"]
    store = Store(tmp_path / "batch.db")
    info = new_run(plan, store)
    from probe.batch import batch_models_for

    chosen = batch_models_for(plan.spec, False)
    assert chosen == [MODEL]
    reports = asyncio.run(_batch(plan, store, info, chosen, None))
    assert reports[0].live_calls == 2 * 2 and fake.calls["live:anthropic"] == live_calls + 4
    assert [b.model for b in reports[0].submitted] == [MODEL] and not reports[0].complete
    assert reports[-1].complete and reports[-1].records == reports[-1].records_planned == 8
    assert_same_records(store.records(info.run_id), live)


def test_split_by_bytes_keeps_every_request_body_within_the_limit(fake: FakeVendor, tmp_path: Path) -> None:
    from providers.batch_base import BatchLimits

    fake.fail = lambda _cid: None
    plan = plan_for(MODEL, limit=4, sources="verbal")
    store = Store(tmp_path / "batch.db")
    info = new_run(plan, store)
    limit = BatchLimits(max_requests=1000, max_bytes=2500)
    reports = asyncio.run(_batch(plan, store, info, [MODEL], limit))
    assert reports[-1].complete
    sizes = fake.create_sizes  # the bodies as the SDK sent them
    assert len(sizes) > 1 and max(sizes) <= 2500 and max(sizes) > 2500 * 0.6
    assert sum(len(r) for r in fake.anthropic_inputs.values()) == 8
