"""The HTTP API driven over HTTP (in-process ASGI client) against the simulator."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from probe.cli import app as cli
from probe.sim import stats_url
from tests.service.conftest import MakeClient, wait_for

SPEC = {"suites": ["demo"], "models": ["sim/calibrated"], "limit": 6, "sources": ["token", "verbal"]}
TOKEN = "t0ken-for-tests-0123456789"


def cli_json(*args: str) -> object:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_submit_poll_and_read_metrics_equal_to_the_cli_report(make_client: MakeClient) -> None:
    client = make_client()
    r = client.post("/v1/runs", json=SPEC)
    assert r.status_code == 202
    body = r.json()
    assert body["status"] == "queued"
    view = wait_for(client, body["run_id"])
    assert view["status"] == "completed", view
    # 6 questions x 3 variants x (token + verbal numeric + verbal linguistic)
    assert view["planned_records"] == 54
    assert view["progress"]["records"] == 54 and view["progress"]["fraction"] == 1.0
    assert sum(view["counts"].values()) == 54
    assert view["origin"] == "api" and view["schedule_id"] is None
    assert view["model_ids"] == {"sim/calibrated": "sim-calibrated-v1"}

    db = str(client.app.state.runtime.store.path)  # type: ignore[attr-defined]
    metrics = client.get(f"/v1/runs/{body['run_id']}/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"] == "application/json"
    assert metrics.json() == cli_json("report", body["run_id"], "--format", "json", "--db", db)
    # other parameters give the CLI's figures for the same parameters
    mass = client.get(f"/v1/runs/{body['run_id']}/metrics", params={"bins": 5, "binning": "mass", "resamples": 200})
    assert mass.json() == cli_json("report", body["run_id"], "--format", "json", "--db", db, "--bins", "5",
                                   "--binning", "mass", "--resamples", "200")
    assert mass.json() != metrics.json()
    # the cached body is served again, byte for byte
    assert client.get(f"/v1/runs/{body['run_id']}/metrics").content == metrics.content


def test_records_pages_match_probe_export(make_client: MakeClient) -> None:
    client = make_client()
    run_id = client.post("/v1/runs", json=SPEC).json()["run_id"]
    wait_for(client, run_id)
    db = str(client.app.state.runtime.store.path)  # type: ignore[attr-defined]
    export = CliRunner().invoke(cli, ["export", run_id, "--db", db]).stdout.splitlines()
    pages = [client.get(f"/v1/runs/{run_id}/records", params={"offset": o, "limit": 20}).json() for o in (0, 20, 40)]
    assert [p["total"] for p in pages] == [54, 54, 54]
    assert [len(p["records"]) for p in pages] == [20, 20, 14]
    got = [rec for p in pages for rec in p["records"]]
    assert got == [json.loads(line) for line in export]
    jsonl = client.get(f"/v1/runs/{run_id}/records", params={"format": "jsonl", "limit": 10_000})
    assert jsonl.headers["content-type"].startswith("application/x-ndjson")
    assert jsonl.text.splitlines() == export


def test_list_runs_filters_and_pages(make_client: MakeClient) -> None:
    client = make_client()
    a = client.post("/v1/runs", json=SPEC).json()["run_id"]
    b = client.post("/v1/runs", json={**SPEC, "models": ["sim/overconfident"], "limit": 3}).json()["run_id"]
    for run_id in (a, b):
        wait_for(client, run_id)
    everything = client.get("/v1/runs").json()
    assert everything["total"] == 2 and {r["run_id"] for r in everything["runs"]} == {a, b}
    assert [r["run_id"] for r in client.get("/v1/runs", params={"model": "sim/overconfident"}).json()["runs"]] == [b]
    assert client.get("/v1/runs", params={"suite": "demo", "status": "completed"}).json()["total"] == 2
    assert client.get("/v1/runs", params={"suite": "capitals"}).json()["total"] == 0
    page = client.get("/v1/runs", params={"limit": 1, "offset": 1}).json()
    assert page["total"] == 2 and len(page["runs"]) == 1 and page["runs"][0]["run_id"] == everything["runs"][1]["run_id"]
    assert client.get("/v1/runs", params={"status": "bogus"}).status_code == 422


@pytest.mark.parametrize(("body", "loc"), [
    ({"models": ["sim/calibrated"]}, ["body", "suites"]),
    ({**SPEC, "samples": 1}, ["body", "samples"]),
    ({**SPEC, "sources": ["token", "telepathy"]}, ["body", "sources", 1]),
    ({**SPEC, "limit": 0}, ["body", "limit"]),
    ({**SPEC, "temperature": "hot"}, ["body", "temperature"]),
    ({**SPEC, "colour": "blue"}, ["body", "colour"]),
    ({**SPEC, "models": ["no-slash"]}, ["body", "models", 0, "model"]),
    ({**SPEC, "suites": ["demo", "no-such-suite"]}, ["body", "suites", 1]),
    ({**SPEC, "suites": ["/etc"]}, ["body", "suites", 0]),
    ({**SPEC, "variants": ["no-such-variant"]}, ["body", "variants"]),
    ({**SPEC, "models": ["sim/calibrated", "nosuchvendor/model-x"]}, ["body", "models", 1]),
    ({**SPEC, "models": ["openai/gpt-4.1-mini"]}, ["body", "models", 0]),
])
def test_invalid_specs_are_422_naming_the_field_and_queue_nothing(make_client: MakeClient, body: dict[str, object],
                                                                  loc: list[object]) -> None:
    client = make_client()
    r = client.post("/v1/runs", json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail[0]["loc"] == loc
    assert client.get("/v1/runs").json()["total"] == 0


def test_missing_key_message_names_the_variable_and_never_a_secret(make_client: MakeClient) -> None:
    client = make_client()
    r = client.post("/v1/runs", json={**SPEC, "models": ["anthropic/claude-sonnet-4-5"]})
    assert r.status_code == 422
    assert "ANTHROPIC_API_KEY" in r.json()["detail"][0]["msg"]


def test_unknown_ids_are_404(make_client: MakeClient) -> None:
    client = make_client()
    for path in ("/v1/runs/r-nope", "/v1/runs/r-nope/metrics", "/v1/runs/r-nope/report", "/v1/runs/r-nope/records",
                 "/v1/schedules/s-nope"):
        assert client.get(path).status_code == 404, path
    assert client.post("/v1/runs/r-nope/cancel").status_code == 404
    assert client.delete("/v1/schedules/s-nope").status_code == 404
    assert client.post("/v1/schedules/s-nope/run").status_code == 404
    assert client.get("/v1/nothing-here").status_code == 404


def test_bodies_over_the_limit_are_413(make_client: MakeClient) -> None:
    client = make_client(max_body_bytes=4096)
    big = {**SPEC, "suites": ["demo"] * 2000}
    assert client.post("/v1/runs", json=big).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
        yield b'{"suites": ['
        for _ in range(1000):
            yield b'"demo",'
        yield b'"demo"], "models": ["sim/calibrated"]}'

    r = client.post("/v1/runs", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert client.post("/v1/runs", json=SPEC).status_code == 202  # a normal body still passes


def test_token_is_required_everywhere_but_healthz(make_client: MakeClient) -> None:
    client = make_client(token=TOKEN)
    good = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/", "/metrics", "/docs", "/openapi.json", "/v1/runs", "/v1/schedules", "/v1/alerts"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers={"Authorization": "Bearer wrong-token-of-some-length"}).status_code == 401
        assert client.get(path, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
        assert client.get(path, headers=good).status_code == 200, path
    r = client.post("/v1/runs", json=SPEC)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/healthz").status_code == 200
    # browsers: a login form sets an HttpOnly cookie that stands in for the header
    assert client.post("/login", content="token=wrong", headers={
        "Content-Type": "application/x-www-form-urlencoded"}).status_code == 401
    login = client.post("/login", content=f"token={TOKEN}", follow_redirects=False,
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert login.status_code == 303
    assert "httponly" in login.headers["set-cookie"].lower()
    assert client.get("/").status_code == 200  # the client kept the cookie


def test_cancel_a_running_run(make_client: MakeClient, slow_sim_url: str) -> None:
    client = make_client(sim=slow_sim_url)
    run_id = client.post("/v1/runs", json={**SPEC, "limit": 40, "concurrency": 2}).json()["run_id"]
    wait_for(client, run_id, statuses=("running",))
    r = client.post(f"/v1/runs/{run_id}/cancel")
    assert r.status_code == 200
    assert r.json()["status"] == "cancelled"
    view = client.get(f"/v1/runs/{run_id}").json()
    assert view["status"] == "cancelled" and view["finished_at"] is not None
    assert view["progress"]["records"] < view["planned_records"]
    assert client.post(f"/v1/runs/{run_id}/cancel").status_code == 409  # already cancelled


def test_cancel_a_queued_run(make_client: MakeClient, slow_sim_url: str) -> None:
    client = make_client(sim=slow_sim_url, workers=1)
    first = client.post("/v1/runs", json={**SPEC, "limit": 20, "concurrency": 2}).json()["run_id"]
    second = client.post("/v1/runs", json={**SPEC, "limit": 2}).json()["run_id"]
    assert client.get(f"/v1/runs/{second}").json()["status"] == "queued"
    assert client.post(f"/v1/runs/{second}/cancel").json()["status"] == "cancelled"
    client.post(f"/v1/runs/{first}/cancel")
    assert wait_for(client, second)["progress"]["records"] == 0


def test_prometheus_metrics(make_client: MakeClient, sim_url: str) -> None:
    client = make_client()
    urllib.request.urlopen(urllib.request.Request(stats_url(sim_url) + "/reset", method="POST")).close()
    run_id = client.post("/v1/runs", json=SPEC).json()["run_id"]
    wait_for(client, run_id)
    r = client.get("/metrics")
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for line in r.text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    assert samples['probe_runs{status="completed"}'] == 1
    assert samples["probe_queue_depth"] == 0
    assert samples["probe_runs_active"] == 0
    # the counter is what the simulator saw (identical requests within a run are served by the cache)
    with urllib.request.urlopen(stats_url(sim_url)) as resp:
        seen = json.loads(resp.read())["requests"]
    assert 0 < samples['probe_provider_calls_total{provider="sim"}'] == seen <= 54
    assert not any(k.startswith("probe_provider_errors_total") for k in samples)
    assert "# TYPE probe_provider_calls_total counter" in r.text


def test_index_page_and_report(make_client: MakeClient) -> None:
    client = make_client()
    run_id = client.post("/v1/runs", json=SPEC).json()["run_id"]
    wait_for(client, run_id)
    page = client.get("/")
    assert page.headers["content-type"].startswith("text/html")
    assert run_id in page.text and f"/v1/runs/{run_id}/report" in page.text
    report = client.get(f"/v1/runs/{run_id}/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert run_id in report.text
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    spec = client.get("/openapi.json").json()
    assert {"/v1/runs", "/v1/runs/{run_id}/metrics", "/v1/schedules", "/v1/alerts"} <= set(spec["paths"])


def test_compare_and_history_equal_the_cli_json(make_client: MakeClient) -> None:
    client = make_client()
    a = client.post("/v1/runs", json=SPEC).json()["run_id"]
    b = client.post("/v1/runs", json={**SPEC, "models": ["sim/overconfident"]}).json()["run_id"]
    for run_id in (a, b):
        wait_for(client, run_id)
    db = str(client.app.state.runtime.store.path)  # type: ignore[attr-defined]
    params = {"resamples": "200"}
    got = client.get("/v1/compare", params={"runs": f"{a},{b}", **params})
    assert got.status_code == 200, got.text
    assert got.json() == cli_json("compare", a, b, "--format", "json", "--resamples", "200", "--db", db)
    html = client.get("/v1/compare", params={"runs": f"{a},{b}", "format": "html", **params})
    assert html.headers["content-type"].startswith("text/html") and "sim/overconfident" in html.text
    hist = client.get("/v1/history", params={"suite": "demo", "model": "sim/calibrated", **params})
    assert hist.status_code == 200, hist.text
    assert hist.json() == cli_json("history", "--suite", "demo", "--model", "sim/calibrated", "--format", "json",
                                   "--resamples", "200", "--db", db)
    # errors: unknown run 404, one model only 422 naming the query field, no matching history 404
    assert client.get("/v1/compare", params={"runs": f"{a},r-nope"}).status_code == 404
    one = client.get("/v1/compare", params={"runs": a})
    assert one.status_code == 422 and one.json()["detail"][0]["loc"] == ["query", "runs"]
    bad = client.get("/v1/compare", params={"runs": f"{a},{b}", "models": "sim/nope,sim/calibrated"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "models"]
    assert client.get("/v1/history", params={"suite": "capitals", "model": "sim/calibrated"}).status_code == 404
    assert client.get("/v1/history", params={"suite": "demo", "model": "sim/calibrated",
                                             "source": "telepathy"}).status_code == 422
