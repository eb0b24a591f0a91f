"""Every fault kind is reachable (per request by header, or drawn at a rate) and counted in
/sim/stats; draws are deterministic per request count."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from typing import Any

import anthropic
import httpx
import openai
import pytest

from probe.prompts import answer_prompt
from probe.sim import (
    FAULT_KINDS,
    FaultSpecError,
    parse_faults,
    parse_latency,
    root_url,
    running_sim,
    stats_url,
)
from probe.suite import Suite

from .conftest import stats


def _body(suite: Suite, persona: str = "sim-calibrated", **extra: Any) -> dict[str, Any]:
    prompt = answer_prompt(suite.questions[0], suite.variants[0])
    return {"model": persona, "messages": [m.model_dump() for m in prompt.messages], "temperature": 0,
            "logprobs": True, "top_logprobs": 5, **extra}


def _fault(client: httpx.Client, suite: Suite, kind: str, **headers: str) -> httpx.Response:
    return client.post("/chat/completions", json=_body(suite), headers={"X-Sim-Fault": kind, **headers})


def test_http_error_faults_have_the_vendors_shapes(client: httpx.Client, mini_suite: Suite, sim_url: str) -> None:
    r = _fault(client, mini_suite, "429", **{"X-Sim-Retry-After": "2"})
    assert r.status_code == 429 and r.headers["retry-after"] == "2" and r.headers["retry-after-ms"] == "2000"
    assert r.json()["error"]["code"] == "rate_limit_exceeded"
    assert r.headers["x-ratelimit-remaining-requests"] == "0"
    q = _fault(client, mini_suite, "quota")
    assert q.status_code == 429 and "retry-after" not in q.headers
    assert q.json()["error"]["code"] == "insufficient_quota"
    assert _fault(client, mini_suite, "401").status_code == 401
    five = _fault(client, mini_suite, "500")
    assert five.status_code == 500 and five.json()["error"]["type"] == "server_error"
    assert _fault(client, mini_suite, "503").status_code == 503
    assert _fault(client, mini_suite, "overloaded").status_code == 529  # alias
    ant = client.post(root_url(sim_url) + "/v1/messages", headers={"X-Sim-Fault": "529"},
                      json={"model": "sim-calibrated", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]})
    assert ant.status_code == 529
    assert ant.json() == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                          "request_id": ant.headers["request-id"]}
    by = stats(sim_url)["by_outcome"]
    assert by == {"429": 1, "quota": 1, "401": 1, "500": 1, "503": 1, "529": 2}


def test_sdks_see_the_errors_they_expect(sim_url: str, mini_suite: Suite) -> None:
    oai = openai.AsyncOpenAI(base_url=sim_url, api_key="x", max_retries=0)
    ant = anthropic.AsyncAnthropic(base_url=root_url(sim_url), api_key="x", max_retries=0)
    body = _body(mini_suite)

    async def main() -> None:
        cases: list[tuple[str, type[Exception]]] = [("429", openai.RateLimitError), ("quota", openai.RateLimitError),
                                                    ("401", openai.AuthenticationError),
                                                    ("500", openai.InternalServerError),
                                                    ("503", openai.InternalServerError)]
        for kind, exc in cases:
            with pytest.raises(exc):
                await oai.chat.completions.create(model=body["model"], messages=body["messages"],
                                                  extra_headers={"X-Sim-Fault": kind})
        for kind, aexc in [("529", anthropic.OverloadedError), ("429", anthropic.RateLimitError),
                           ("500", anthropic.InternalServerError)]:
            with pytest.raises(aexc):
                await ant.messages.create(model="sim-calibrated", max_tokens=3,
                                          messages=[{"role": "user", "content": "hello"}],
                                          extra_headers={"X-Sim-Fault": kind})
    asyncio.run(main())


def test_body_faults(client: httpx.Client, mini_suite: Suite, sim_url: str) -> None:
    ok = client.post("/chat/completions", json=_body(mini_suite))
    bad = _fault(client, mini_suite, "malformed")
    assert bad.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad.content)
    assert bad.content.startswith(b'{"id":"chatcmpl-')
    with pytest.raises(httpx.RemoteProtocolError):
        _fault(client, mini_suite, "truncated")
    dropped = _fault(client, mini_suite, "drop_logprobs").json()
    assert dropped["choices"][0]["logprobs"] is None
    assert dropped["choices"][0]["message"] == ok.json()["choices"][0]["message"]
    forced_clean = _fault(client, mini_suite, "none")
    assert forced_clean.json()["choices"][0]["logprobs"] is not None
    unknown = _fault(client, mini_suite, "gremlins")
    assert unknown.status_code == 400 and "gremlins" in unknown.json()["error"]["message"]
    by = stats(sim_url)["by_outcome"]
    assert by == {"ok": 2, "malformed": 1, "truncated": 1, "drop_logprobs": 1, "bad_request": 1}


def test_openai_sdk_fails_cleanly_on_broken_bodies(sim_url: str, mini_suite: Suite) -> None:
    oai = openai.AsyncOpenAI(base_url=sim_url, api_key="x", max_retries=0)
    body = _body(mini_suite)

    async def main() -> None:
        with pytest.raises(openai.APIConnectionError):
            await oai.chat.completions.create(model=body["model"], messages=body["messages"],
                                              extra_headers={"X-Sim-Fault": "truncated"})
        with pytest.raises((openai.APIError, json.JSONDecodeError)):
            await oai.chat.completions.create(model=body["model"], messages=body["messages"],
                                              extra_headers={"X-Sim-Fault": "malformed"})
    asyncio.run(main())


def test_hang_outlasts_the_client_timeout_and_is_counted(client: httpx.Client, mini_suite: Suite,
                                                          sim_url: str) -> None:
    with pytest.raises(httpx.ReadTimeout):
        client.post("/chat/completions", json=_body(mini_suite), headers={"X-Sim-Fault": "hang"}, timeout=0.3)
    assert stats(sim_url)["by_outcome"] == {"hang": 1}
    # the server is not stuck behind it
    assert client.post("/chat/completions", json=_body(mini_suite)).status_code == 200


def test_hang_ends_after_hang_s_with_a_normal_response(mini_suite: Suite) -> None:
    with running_sim(suites=[mini_suite], bundled=False, hang_s=0.2) as url:
        r = httpx.post(url + "/chat/completions", json=_body(mini_suite), headers={"X-Sim-Fault": "timeout"},
                       timeout=10)
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]
        assert stats(url)["by_outcome"] == {"hang": 1}


def test_latency_delays_responses(mini_suite: Suite) -> None:
    with running_sim(suites=[mini_suite], bundled=False, latency_ms=400) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url + "/chat/completions", json=_body(mini_suite), timeout=0.1)
        fast = httpx.post(url + "/chat/completions", json=_body(mini_suite), timeout=5,
                          headers={"X-Sim-Latency-Ms": "0"})
        assert fast.status_code == 200


def test_drawn_faults_follow_the_rates_and_replay_exactly(mini_suite: Suite) -> None:
    spec = "429=0.2,500=0.1,malformed=0.05,drop_logprobs=0.05"
    plan = parse_faults(spec, seed=5)
    n = 200
    expected = [plan.draw(i) or "ok" for i in range(n)]
    with running_sim(suites=[mini_suite], bundled=False, fault=spec, fault_seed=5) as url, \
            httpx.Client(base_url=url, timeout=10) as c:
        def run() -> list[str]:
            out = []
            for _ in range(n):
                r = c.post("/chat/completions", json=_body(mini_suite))
                if r.status_code != 200:
                    out.append(str(r.status_code))
                else:
                    try:
                        lp = r.json()["choices"][0]["logprobs"]
                        out.append("ok" if lp is not None else "drop_logprobs")
                    except json.JSONDecodeError:
                        out.append("malformed")
            return out

        first = run()
        counts = stats(url)["by_outcome"]
        c.post(stats_url(url) + "/reset")
        assert run() == first == expected
    assert counts == {k: expected.count(k) for k in set(expected)}  # type: ignore[comparison-overlap]
    for kind, rate in plan.rates.items():
        share = expected.count(kind) / n
        assert abs(share - rate) <= 4 * math.sqrt(rate * (1 - rate) / n)


def test_every_fault_kind_is_reachable_by_header(client: httpx.Client, mini_suite: Suite, sim_url: str) -> None:
    for kind in FAULT_KINDS:
        with contextlib.suppress(httpx.ReadTimeout, httpx.RemoteProtocolError):
            client.post("/chat/completions", json=_body(mini_suite), headers={"X-Sim-Fault": kind},
                        timeout=0.5 if kind == "hang" else 10)
    assert stats(sim_url)["by_outcome"] == dict.fromkeys(FAULT_KINDS, 1)


def test_fault_and_latency_specs_are_checked() -> None:
    assert parse_faults("rate_limit=0.1, 500=0.2").rates == {"429": 0.1, "500": 0.2}
    assert parse_faults(None).draw(0) is None
    for bad, words in [("bogus=0.1", "unknown fault kind"), ("429", "KIND=RATE"), ("429=x", "not a number"),
                       ("429=1.5", "between 0 and 1"), ("429=0.6,500=0.6", "more than 1")]:
        with pytest.raises(FaultSpecError, match=words):
            parse_faults(bad)
    assert parse_latency("50").seconds(3) == 0.05
    lat = parse_latency("lognormal:50:0.5", seed=1)
    draws = sorted(lat.seconds(i) for i in range(2001))
    assert draws[1000] == pytest.approx(0.05, rel=0.1) and draws[0] < 0.03 < 0.08 < draws[-1]
    for bad in ("-1", "lognormal:50", "gamma:1:2", "fast"):
        with pytest.raises(FaultSpecError):
            parse_latency(bad)
