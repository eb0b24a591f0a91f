"""OpenAI Batch API life cycle through the official SDK (respx): upload, create, in progress, completed with
errored and expired lines in shuffled output/error files; the records equal a live run of the same plan
against the same canned answers (live chat over probe's aiohttp client, on a 127.0.0.1 port)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import respx

from probe.batch import AdvanceReport, BatchStore, advance, start
from probe.record import Record
from probe.runner.engine import CACHE_TAG
from probe.runner.run import Plan, close_providers, execute, new_run, open_providers
from probe.storage import RunInfo, Store
from providers import RetryPolicy
from providers.batch_base import BatchLimits
from tests.batch.conftest import assert_same_records, by_key, plan_for
from tests.batch.fakevendor import FakeVendor, LoopbackVendor, every_nth

MODEL = "openai/gpt-4o-mini"
SMALL = BatchLimits(max_requests=7, max_bytes=10**9)


async def _live(plan: Plan, store: Store, info: RunInfo) -> RunInfo:
    providers = open_providers(plan.spec)
    try:
        return await execute(plan, store, info, providers, RetryPolicy.no_wait())
    finally:
        await close_providers(providers)


async def _batch(plan: Plan, store: Store, info: RunInfo, models: list[str], limits: BatchLimits | None,
                 max_rounds: int = 12) -> list[AdvanceReport]:
    providers = open_providers(plan.spec)
    try:
        reports = [await start(plan, store, info, providers, models, limits=limits)]
        while not reports[-1].complete and len(reports) < max_rounds:
            reports.append(await advance(plan, store, info.run_id, providers, models, limits=limits))
        return reports
    finally:
        await close_providers(providers)


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeVendor, LoopbackVendor]:
    fake = FakeVendor(fail=every_nth(errored=9, expired=9), refuse_logprobs=frozenset({"o3-mini"}))
    srv = LoopbackVendor(fake).start()
    monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0123456789")
    yield fake, srv
    srv.stop()


def _live_records(plan: Plan, tmp_path: Path) -> list[Record]:
    store = Store(tmp_path / "live.db")
    info = asyncio.run(_live(plan, store, new_run(plan, store)))
    assert info.status == "completed"
    return store.records(info.run_id)


def test_life_cycle_split_errors_and_records_equal_live(vendor: tuple[FakeVendor, LoopbackVendor],
                                                         tmp_path: Path) -> None:
    fake, srv = vendor
    plan = plan_for(MODEL)
    live = _live_records(plan, tmp_path)
    live_calls = fake.calls["live:openai"]
    assert live_calls == 6 * 5  # answer, self-evaluation, two verbal forms, one n=3 consistency call per item

    store = Store(tmp_path / "batch.db")
    info = new_run(plan, store)
    with respx.mock(base_url=srv.url + "/v1", assert_all_called=False) as router:
        router.route().mock(side_effect=fake.respx_handler)
        reports = asyncio.run(_batch(plan, store, info, [MODEL], SMALL))

    # no live call was made: every record came from batch results through the cache
    assert fake.calls["live:openai"] == live_calls
    first = reports[0]
    assert first.records_written == 0 and not first.collected
    # stage 1: answer, two verbal forms and consistency per item = 24 requests, split 7/7/7/3
    assert [b.requests for b in first.submitted] == [7, 7, 7, 3]
    assert all(b.stage == 1 and b.state == "in_progress" and b.batch_id for b in first.submitted)
    for b in fake.openai_batches.values():
        assert len(b["_lines"]) <= 7
        assert b["metadata"]["probe_run"] == info.run_id
    # the first poll finds them in progress; the second collects them and submits stage 2 (ptrue)
    assert len(reports[1].in_flight) == 4 and not reports[1].collected
    assert len(reports[2].collected) == 4
    assert reports[2].records_written > 0
    assert reports[2].submitted and {b.stage for b in reports[2].submitted} == {2}
    last = reports[-1]
    assert last.complete and last.status == "completed"
    assert store.get_run(info.run_id).status == "completed"
    assert store.get_run(info.run_id).model_ids == {MODEL: "gpt-4o-mini-2024-07-18"}

    got = store.records(info.run_id)
    statuses = {r.status for r in got}
    assert {"error:expired", "error:transient"} <= statuses
    assert len(got) == len(live)
    expired = [r for r in got if r.status == "error:expired"]
    assert all("batch_expired" in (r.error or "") for r in expired)
    errored = [r for r in got if r.status == "error:transient"]
    assert all((r.error or "").startswith("HTTP 500 [server_error]") for r in errored)
    # records the batch answered are identical to live ones (latency aside)
    want, have = by_key(live), by_key(got)
    answered = [k for k, r in have.items() if not r["status"].startswith("error:")]
    assert len(answered) > len(got) // 2
    assert all(have[k] == want[k] for k in answered)
    # a batch has no per-request wall time: batch-answered records say "not measured", never 0 s
    assert all(r.latency_s is None for r in got if not r.status.startswith("error:"))
    assert all(r.latency_s is not None and r.latency_s > 0 for r in live)
    assert store.get_run(info.run_id).message and "probe run --resume" in (store.get_run(info.run_id).message or "")

    # the failed lines are known failures: another advance changes nothing and submits nothing
    providers_again = asyncio.run(_batch(plan, store, info, [MODEL], SMALL, max_rounds=1))
    assert providers_again[0].complete and not providers_again[0].submitted

    # retried live (probe run --resume RUN_ID): the run now equals the live run in full
    asyncio.run(_live(plan, store, store.get_run(info.run_id)))
    assert_same_records(store.records(info.run_id), live)
    assert fake.calls["live:openai"] > live_calls


def test_request_lines_are_the_live_bodies(vendor: tuple[FakeVendor, LoopbackVendor], tmp_path: Path) -> None:
    """Each uploaded line is {custom_id, method, url, body} with the body a live call sends; custom_id = key hex."""
    fake, srv = vendor
    plan = plan_for(MODEL, limit=2, sources="token,verbal")
    store = Store(tmp_path / "b.db")
    info = new_run(plan, store)
    with respx.mock(base_url=srv.url + "/v1", assert_all_called=False) as router:
        router.route().mock(side_effect=fake.respx_handler)
        asyncio.run(_batch(plan, store, info, [MODEL], None, max_rounds=1))
    (batch,) = fake.openai_batches.values()
    keys = {cid: row.cache_key for b in BatchStore(store).batches(info.run_id)
            for cid, row in BatchStore(store).requests(b.local_id).items()}
    assert len(batch["_lines"]) == len(keys) == 2 * 3
    for line in batch["_lines"]:
        assert set(line) == {"custom_id", "method", "url", "body"}
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert keys[line["custom_id"]] == f"{CACHE_TAG}:{line['custom_id']}"
        body = line["body"]
        assert body["model"] == "gpt-4o-mini" and "max_completion_tokens" in body and "temperature" in body
        if body.get("logprobs"):
            assert body["top_logprobs"] == 20
    raw = fake.files[batch["input_file_id"]]
    assert raw.endswith(b"\n") and len(raw.splitlines()) == 6
    assert all(json.loads(x)["custom_id"] for x in raw.splitlines())
    assert b"sk-test" not in raw


def test_model_refusing_logprobs_is_resubmitted_without_them(vendor: tuple[FakeVendor, LoopbackVendor],
                                                             tmp_path: Path) -> None:
    """A 400 unsupported_parameter line is learned (like the live adapter's re-send) and resubmitted without
    logprobs; the records say unavailable:model_refused, exactly as the live run's."""
    fake, srv = vendor
    fake.fail = lambda _cid: None
    model = "openai/o3-mini"
    plan = plan_for(model, limit=4, sources="token,ptrue,verbal")
    live = _live_records(plan, tmp_path)
    assert {r.status for r in live if r.source in ("token", "ptrue")} == {"unavailable:model_refused"}
    store = Store(tmp_path / "b.db")
    info = new_run(plan, store)
    with respx.mock(base_url=srv.url + "/v1", assert_all_called=False) as router:
        router.route().mock(side_effect=fake.respx_handler)
        reports = asyncio.run(_batch(plan, store, info, [model], None))
    assert reports[-1].complete
    stage2 = [b for r in reports for b in r.submitted if b.stage == 2]
    assert stage2 and sum(b.requests for b in stage2) == 4  # the four answers, now without logprobs
    assert BatchStore(store).learned(info.run_id, model) == (True, ())
    assert_same_records(store.records(info.run_id), live)
