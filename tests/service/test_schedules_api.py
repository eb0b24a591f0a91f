"""Schedules over HTTP with an injectable clock; drift alerts and their webhook; restarts."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from tenacity import wait_none

from probe.service.runtime import Runtime
from probe.service.scheduler import Fire
from tests.service._helpers import FakeClock, ModelSwapProxy, WebhookReceiver
from tests.service.conftest import MakeClient, wait_for

START = datetime(2025, 1, 6, 10, 30, tzinfo=UTC)
RUN = {"suites": ["arithmetic"], "models": ["sim/calibrated"], "sources": ["token"], "variants": ["plain"],
       "limit": 500}


def hour(h: int) -> datetime:
    return START.replace(hour=h, minute=0)


def runtime(client: TestClient) -> Runtime:
    rt: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    return rt


def tick(client: TestClient) -> list[Fire]:
    assert client.portal is not None
    fires: list[Fire] = client.portal.call(runtime(client).tick)
    return fires


def test_schedule_fires_once_per_period_and_a_swapped_model_raises_drift_alerts(
        make_client: MakeClient, sim_url: str) -> None:
    clock = FakeClock(START)
    receiver = WebhookReceiver(fail_first=1)
    proxy = ModelSwapProxy(sim_url, swap_from="sim-calibrated", swap_to="sim-overconfident")
    with receiver.serve() as hook, proxy.serve() as proxied:
        client = make_client(sim=proxied, runtime_kw={"clock": clock, "webhook_wait": wait_none()})
        r = client.post("/v1/schedules", json={"cron": "0 * * * *", "timezone": "Europe/Berlin", "run": RUN,
                                               "webhook": hook})
        assert r.status_code == 201, r.text
        sched = r.json()
        assert sched["next_fire_at"].startswith("2025-01-06T11:00:00")
        assert client.get("/v1/schedules").json()["schedules"] == [sched]
        assert tick(client) == []  # not due yet

        runs = []
        for h in (11, 12, 13):
            clock.now = hour(h)
            if h == 13:
                proxy.swap = True  # the vendor silently serves another model under the same name
            fires = tick(client)
            assert len(fires) == 1 and fires[0].fire_at == hour(h)
            clock.now += timedelta(minutes=30)
            assert tick(client) == []  # once per period
            view = wait_for(client, fires[0].run_id)
            assert view["status"] == "completed", view
            assert (view["origin"], view["schedule_id"]) == ("schedule", sched["schedule_id"])
            runs.append(view)
            if h == 12:  # same model, same answers: no alert
                assert client.get("/v1/alerts").json()["total"] == 0

        alerts = client.get("/v1/alerts").json()
        kinds = {(a["kind"], a["source"], a["variant"]) for a in alerts["alerts"]}
        assert ("model_id", None, None) in kinds
        assert ("ece", "token", "plain") in kinds
        assert all(a["run_id"] == runs[2]["run_id"] and a["previous_run_id"] == runs[1]["run_id"]
                   for a in alerts["alerts"])
        ece = next(a for a in alerts["alerts"] if a["kind"] == "ece")
        assert ece["current"] > ece["previous"] and ece["ci"][0] > 0  # worse, beyond the interval
        model = next(a for a in alerts["alerts"] if a["kind"] == "model_id")
        assert (model["previous"], model["current"]) == ("sim-calibrated-v1", "sim-overconfident-v1")
        # the webhook got one POST after one failed attempt, with every alert
        assert receiver.attempts == 2
        (posted,) = receiver.bodies
        assert posted["event"] == "probe.drift" and posted["run_id"] == runs[2]["run_id"]
        assert {a["alert_id"] for a in posted["alerts"]} == {a["alert_id"] for a in alerts["alerts"]}
        assert {a["webhook_status"] for a in alerts["alerts"]} == {"delivered"}
        assert client.get("/v1/alerts", params={"schedule_id": "s-other"}).json()["total"] == 0

        after = client.get(f"/v1/schedules/{sched['schedule_id']}").json()
        assert after["last_run_id"] == runs[2]["run_id"]
        assert after["next_fire_at"].startswith("2025-01-06T14:00:00")
        page = client.get("/").text
        assert sched["schedule_id"] in page and "sim-overconfident-v1" in page
        assert client.delete(f"/v1/schedules/{sched['schedule_id']}").status_code == 204
        assert client.get(f"/v1/schedules/{sched['schedule_id']}").status_code == 404
        assert client.get("/v1/alerts").json()["total"] == alerts["total"]  # alerts stay


def test_missed_fires_run_once_at_start_up(make_client: MakeClient, tmp_path: Any) -> None:
    clock = FakeClock(START)
    first = make_client(runtime_kw={"clock": clock})
    sched = first.post("/v1/schedules", json={"cron": "*/10 * * * *", "run": {**RUN, "limit": 5}}).json()
    make_client.stop(first)
    clock.now = START + timedelta(hours=3)  # 18 fires missed while no service ran
    # the scheduler loop's first look happens at start-up
    second = make_client(runtime_kw={"clock": clock}, tick_s=0.05)
    runs = wait_for_runs(second, 1)
    assert [r["schedule_id"] for r in runs] == [sched["schedule_id"]]
    wait_for(second, runs[0]["run_id"])
    assert len(second.get("/v1/runs").json()["runs"]) == 1  # no pile-up
    assert second.get(f"/v1/schedules/{sched['schedule_id']}").json()["next_fire_at"].startswith(
        "2025-01-06T13:40:00")


def wait_for_runs(client: TestClient, n: int) -> list[dict[str, Any]]:
    for _ in range(400):
        runs: list[dict[str, Any]] = client.get("/v1/runs").json()["runs"]
        if len(runs) >= n:
            return [client.get(f"/v1/runs/{r['run_id']}").json() for r in runs]
        threading.Event().wait(0.025)
    raise AssertionError("no run started")


def test_two_services_on_one_database_start_each_fire_once(make_client: MakeClient) -> None:
    clock = FakeClock(START)
    a = make_client(runtime_kw={"clock": clock})
    b = make_client(runtime_kw={"clock": clock})
    for minute in (0, 15, 30, 45):
        a.post("/v1/schedules", json={"cron": f"{minute} * * * *", "run": {**RUN, "limit": 2}})
    won: dict[str, list[Fire]] = {"a": [], "b": []}
    barrier = threading.Barrier(2)

    def race(name: str, client: TestClient) -> None:
        barrier.wait()
        won[name] += tick(client)

    for step in range(1, 9):  # two hours in 15-minute steps, both services looking at the same moment
        clock.now = START + timedelta(minutes=15 * step)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(race, ["a", "b"], [a, b]))
    fires = won["a"] + won["b"]
    assert len(fires) == 8
    assert len({(f.schedule_id, f.fire_at) for f in fires}) == 8
    for f in fires:
        wait_for(a, f.run_id)
    assert a.get("/v1/runs").json()["total"] == 8


def test_invalid_schedules_are_422_naming_the_field(make_client: MakeClient) -> None:
    client = make_client()
    cases = [({"cron": "0 3 * *", "run": RUN}, ["body", "cron"]),
             ({"cron": "0 3 * * 1", "timezone": "Nowhere/City", "run": RUN}, ["body", "timezone"]),
             ({"cron": "0 3 * * 1", "run": {**RUN, "models": ["openai/gpt-4.1"]}}, ["body", "run", "models", 0]),
             ({"cron": "0 3 * * 1", "run": {**RUN, "samples": 0}}, ["body", "run", "samples"]),
             ({"cron": "0 3 * * 1", "run": RUN, "webhook": "file:///etc/passwd"}, ["body", "webhook"])]
    for body, loc in cases:
        r = client.post("/v1/schedules", json=body)
        assert r.status_code == 422, body
        assert r.json()["detail"][0]["loc"] == loc
    assert client.get("/v1/schedules").json()["schedules"] == []


def test_interrupted_runs_resume_on_the_next_start(make_client: MakeClient, slow_sim_url: str) -> None:
    first = make_client(sim=slow_sim_url, shutdown_grace_s=0)
    run_id = first.post("/v1/runs", json={**RUN, "limit": 40, "concurrency": 4}).json()["run_id"]
    for _ in range(400):
        if first.get(f"/v1/runs/{run_id}").json()["progress"]["records"] >= 4:
            break
        threading.Event().wait(0.025)
    make_client.stop(first)  # graceful shutdown with no grace: the run is interrupted
    calls_before = runtime(first).counters.calls["sim"]
    store = runtime(first).store
    stopped = store.get_run(run_id)
    done_before = sum(store.status_counts(run_id).values())
    assert stopped.status == "interrupted" and 4 <= done_before < 40

    second = make_client(sim=slow_sim_url)
    view = wait_for(second, run_id)
    assert view["status"] == "completed" and view["progress"]["records"] == 40
    # resumed, not restarted: the second process asked only for what was missing
    calls_after = runtime(second).counters.calls["sim"]
    assert calls_after <= 40 - done_before
    assert calls_before + calls_after >= 40
