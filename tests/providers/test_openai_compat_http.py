"""The Chat Completions adapter over real HTTP on 127.0.0.1 (aiohttp client ↔ aiohttp.web server)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from probe.completion import ChatRequest, Completion, Message, ProviderError
from probe.spec import ModelSpec
from providers import create_provider
from providers.base import Provider
from tests.providers import payloads as P
from tests.providers.conftest import FIXTURES
from tests.providers.loopback import LoopbackServer, Reply

T = TypeVar("T")
REQ = ChatRequest(messages=(Message(role="user", content="A or B?"),), max_tokens=3, temperature=0.0,
                  logprobs=True, top_logprobs=5)


def fixture(folder: str, name: str) -> Any:
    return json.loads((FIXTURES / folder / f"{name}.json").read_text())


def run(provider: Provider, fn: Callable[[Provider], Awaitable[T]]) -> T:
    async def go() -> T:
        try:
            return await fn(provider)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def make(server: LoopbackServer, model: str, **env: str) -> Provider:
    spec = ModelSpec.parse(model)
    var = spec.provider.upper().replace("-", "_") + "_BASE_URL"
    return create_provider(spec, env={var: server.url + "/v1", **env})


def complete(server: LoopbackServer, model: str, req: ChatRequest = REQ, **env: str) -> Completion:
    return run(make(server, model, **env), lambda p: p.complete(req))


def test_llamacpp_fixture_round_trip(server: LoopbackServer) -> None:
    server.queue(Reply(body=fixture("llama-server", "chat_logprobs_top5")))
    c = complete(server, "llamacpp/tiny")
    sent = server.received[0]
    assert sent.path == "/v1/chat/completions" and sent.method == "POST"
    assert sent.json == {"model": "tiny", "messages": [{"role": "user", "content": "A or B?"}], "max_tokens": 3,
                         "temperature": 0.0, "logprobs": True, "top_logprobs": 5}
    assert "Authorization" not in sent.headers  # no key variable set, none needed
    assert c.first.text == " A A A" and c.first.logprob_state == "available"
    assert c.model_reported == "tiny.gguf" and c.usage.output_tokens == 3 and c.latency_s > 0


def test_llamacpp_top_logprobs_zero_is_sent_as_one_and_trimmed(server: LoopbackServer) -> None:
    server.queue(Reply(body=fixture("llama-cpp-python-0.3.36", "chat_top_logprobs0")))
    c = complete(server, "llamacpp/tiny", REQ.model_copy(update={"top_logprobs": None}))
    assert server.received[0].json["top_logprobs"] == 1
    assert c.first.tokens is not None and all(t.top == () for t in c.first.tokens)
    assert c.first.logprob_state == "available"


def test_key_is_sent_as_bearer_when_set(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OPENAI_EQUIVALENT))
    complete(server, "vllm/Qwen/Qwen3-8B", VLLM_API_KEY="local-key-123")
    assert server.received[0].headers["Authorization"] == "Bearer local-key-123"
    assert server.received[0].json["model"] == "Qwen/Qwen3-8B"


def test_openai_logprob_refusal_403_resent_without_logprobs_and_remembered(server: LoopbackServer) -> None:
    server.queue(Reply(status=403, body=P.OPENAI_LOGPROBS_403), Reply(body=P.OLLAMA_SILENT_DROP),
                 Reply(body=P.OLLAMA_SILENT_DROP))
    provider = make(server, "openai/o4-mini", OPENAI_API_KEY="sk-test")

    async def twice(p: Provider) -> tuple[Completion, Completion]:
        return await p.complete(REQ), await p.complete(REQ)

    first, second = run(provider, twice)
    bodies = [r.json for r in server.received]
    assert "logprobs" in bodies[0] and "logprobs" not in bodies[1] and "logprobs" not in bodies[2]
    assert len(bodies) == 3  # the second call does not ask again
    for c in (first, second):
        assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "model_refused")
        assert c.first.text == "B"
    assert bodies[0]["max_completion_tokens"] == 3


def test_openai_unsupported_parameter_400_resent_without_logprobs(server: LoopbackServer) -> None:
    server.queue(Reply(status=400, body=P.OPENAI_LOGPROBS_400), Reply(body=P.OLLAMA_SILENT_DROP))
    c = complete(server, "openai/gpt-5", OPENAI_API_KEY="sk-test")
    assert c.first.logprob_reason == "model_refused" and len(server.received) == 2


def test_rejected_temperature_dropped_and_recorded(server: LoopbackServer) -> None:
    server.queue(Reply(status=400, body=P.OPENAI_TEMPERATURE_400), Reply(body=P.OPENAI_EQUIVALENT))
    c = complete(server, "openai/o3", OPENAI_API_KEY="sk-test")
    assert "temperature" in server.received[0].json and "temperature" not in server.received[1].json
    assert c.dropped_params == ("temperature",) and c.first.logprob_state == "available"


def test_calls_in_flight_when_a_rejection_is_learned_are_resent_too(server: LoopbackServer) -> None:
    # A model that rejects temperature, and several calls sent before any answer came back: each
    # must be re-sent without it, not only the first to learn it (all would carry the parameter).
    def reject_temperature(got: Any) -> Reply:
        if "temperature" in got.json:
            return Reply(status=400, body=P.OPENAI_TEMPERATURE_400, delay_s=0.05)
        return Reply(body=P.OPENAI_EQUIVALENT)

    server.handler = reject_temperature

    async def many(p: Provider) -> list[Completion]:
        return list(await asyncio.gather(*(p.complete(REQ) for _ in range(6))))

    done = run(make(server, "openai/o3", OPENAI_API_KEY="sk-test"), many)
    assert len(done) == 6 and all(c.dropped_params == ("temperature",) for c in done)
    assert sum("temperature" in r.json for r in server.received) == 6  # each first send, none after


def test_ollama_silent_drop_is_endpoint_dropped(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OLLAMA_SILENT_DROP))
    c = complete(server, "ollama/llama3.2")
    assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "endpoint_dropped")


def test_together_sends_integer_logprobs_and_reads_legacy_shape(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.TOGETHER_EQUIVALENT))
    c = complete(server, "together/meta-llama/Llama-3.3-70B-Instruct-Turbo", REQ.model_copy(update={"top_logprobs": 3}),
                 TOGETHER_API_KEY="tg")
    assert server.received[0].json["logprobs"] == 3 and "top_logprobs" not in server.received[0].json
    assert c.first.tokens is not None and len(c.first.tokens) == 2


def test_openrouter_requires_parameters(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OPENROUTER_BYTES_NULL))
    complete(server, "openrouter/openai/gpt-4o-mini", OPENROUTER_API_KEY="or")
    assert server.received[0].json["provider"] == {"require_parameters": True}
    assert server.received[0].json["model"] == "openai/gpt-4o-mini"


def test_groq_never_sends_logprobs(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OLLAMA_SILENT_DROP))
    c = complete(server, "groq/llama-3.3-70b-versatile", GROQ_API_KEY="gq")
    assert "logprobs" not in server.received[0].json
    assert c.first.logprob_reason == "provider_has_none"


def test_sim_model_prefix(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OPENAI_EQUIVALENT))
    complete(server, "sim/overconfident")
    assert server.received[0].json["model"] == "sim-overconfident"


def test_azure_deployment_url_api_version_and_header(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OPENAI_EQUIVALENT))
    provider = create_provider(ModelSpec.parse("azure/my-gpt4o"),
                               env={"AZURE_OPENAI_ENDPOINT": server.url, "AZURE_OPENAI_API_KEY": "az-key",
                                    "AZURE_OPENAI_API_VERSION": "2024-10-21"})
    run(provider, lambda p: p.complete(REQ))
    got = server.received[0]
    assert got.path == "/openai/deployments/my-gpt4o/chat/completions"
    assert got.query == {"api-version": "2024-10-21"} and got.headers["api-key"] == "az-key"
    assert got.json["top_logprobs"] == 5


def test_azure_429_string_code(server: LoopbackServer) -> None:
    server.queue(Reply(status=429, body=P.AZURE_429, headers={"Retry-After": "7"}))
    provider = create_provider(ModelSpec.parse("azure/d"), env={"AZURE_OPENAI_ENDPOINT": server.url,
                                                                "AZURE_OPENAI_API_KEY": "k"})
    with pytest.raises(ProviderError) as e:
        run(provider, lambda p: p.complete(REQ))
    assert e.value.kind == "rate_limit" and e.value.failure.retry_after == 7.0


def test_n_fan_out_when_the_host_has_no_n(server: LoopbackServer) -> None:
    server.handler = lambda r: Reply(body=dict(P.OPENAI_EQUIVALENT, choices=[
        dict(P.OPENAI_EQUIVALENT["choices"][0], message={"role": "assistant", "content": f"seed {r.json['seed']}"})]))
    c = complete(server, "llamacpp/tiny", REQ.model_copy(update={"n": 3, "seed": 10}))
    assert len(server.received) == 3 and all("n" not in r.json for r in server.received)
    assert sorted(r.json["seed"] for r in server.received) == [10, 11, 12]
    assert [ch.index for ch in c.choices] == [0, 1, 2] and sorted(ch.text for ch in c.choices) == [
        "seed 10", "seed 11", "seed 12"]
    assert c.usage.output_tokens == 6


def test_n_sent_when_the_host_has_it(server: LoopbackServer) -> None:
    server.queue(Reply(body=fixture("llama-server", "chat_n2")))
    c = complete(server, "vllm/m", REQ.model_copy(update={"n": 2}))
    assert server.received[0].json["n"] == 2 and len(c.choices) == 2


@pytest.mark.parametrize(("reply", "kind"), [
    (Reply(status=500, body="Internal Server Error", content_type="text/plain"), "transient"),
    (Reply(status=200, body="{not json", content_type="text/plain"), "malformed"),
    (Reply(status=200, body={"id": "x", "object": "chat.completion"}), "malformed"),
    (Reply(status=200, body=P.OPENROUTER_200_ERROR), "transient"),
    (Reply(status=200, body={"error": {"code": 429, "message": "slow down"}}), "rate_limit"),
    (Reply(status=401, body={"detail": "Invalid API key"}), "auth"),
    (Reply(status=400, body=P.VLLM_400), "bad_request"),
    (Reply(status=503, body=P.GEMINI_503, headers={"Retry-After": "2"}), "overloaded"),
])
def test_failures_are_classified(server: LoopbackServer, reply: Reply, kind: str) -> None:
    server.queue(reply)
    with pytest.raises(ProviderError) as e:
        complete(server, "vllm/m")
    assert e.value.kind == kind
    assert len(server.received) == 1  # one attempt: no retries inside complete


def test_auth_failure_names_the_variable(server: LoopbackServer) -> None:
    server.queue(Reply(status=401, body=P.OPENAI_401))
    with pytest.raises(ProviderError) as e:
        complete(server, "openai/gpt-4o-mini", OPENAI_API_KEY="sk-abc")
    assert "check OPENAI_API_KEY" in str(e.value)


def test_timeout_is_transient(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.OPENAI_EQUIVALENT, delay_s=2.0))
    with pytest.raises(ProviderError) as e:
        complete(server, "vllm/m", PROBE_TIMEOUT_S="0.2")
    assert e.value.kind == "transient" and "timed out after 0.2s" in e.value.failure.message


def test_connection_refused_is_transient() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = create_provider(ModelSpec.parse("vllm/m"), env={"VLLM_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    with pytest.raises(ProviderError) as e:
        run(provider, lambda p: p.complete(REQ))
    assert e.value.kind == "transient"


def test_one_session_per_provider(server: LoopbackServer) -> None:
    server.handler = lambda r: Reply(body=P.OPENAI_EQUIVALENT)
    provider = make(server, "vllm/m")

    async def calls(p: Provider) -> set[int]:
        sessions = set()
        for _ in range(3):
            await p.complete(REQ)
            sessions.add(id(p._http._session))  # type: ignore[attr-defined]
        await asyncio.gather(*(p.complete(REQ) for _ in range(5)))
        sessions.add(id(p._http._session))  # type: ignore[attr-defined]
        return sessions

    assert len(run(provider, calls)) == 1
    assert len(server.received) == 8
    assert provider._http._session is None  # type: ignore[attr-defined]  # closed by aclose


def test_network_guard_stops_a_real_vendor_url(loopback_only: list[str]) -> None:
    provider = create_provider(ModelSpec.parse("openai/gpt-4o-mini"), env={"OPENAI_API_KEY": "sk-test"})
    assert provider.base_url == "https://api.openai.com/v1"
    with pytest.raises(ProviderError) as e:
        run(provider, lambda p: p.complete(REQ))
    assert e.value.kind == "transient" and loopback_only == ["api.openai.com"]


def test_max_tokens_field_learned_from_a_400(server: LoopbackServer) -> None:
    server.queue(Reply(status=400, body={"error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                   "'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens",
        "code": "unsupported_parameter"}}), Reply(body=P.OPENAI_EQUIVALENT), Reply(body=P.OPENAI_EQUIVALENT))
    provider = create_provider(ModelSpec.parse("azure/o3-mini"), env={"AZURE_OPENAI_ENDPOINT": server.url,
                                                                      "AZURE_OPENAI_API_KEY": "k"})

    async def twice(p: Provider) -> Completion:
        await p.complete(REQ)
        return await p.complete(REQ)

    run(provider, twice)
    assert [("max_tokens" in r.json, "max_completion_tokens" in r.json) for r in server.received] == [
        (True, False), (False, True), (False, True)]


def test_content_filter_finish_is_a_refusal() -> None:
    from providers.openai_chat import LogprobAsk, completion_from_openai

    payload = json.loads(json.dumps(P.OLLAMA_SILENT_DROP))
    payload["choices"][0].update(finish_reason="content_filter", message={"role": "assistant", "content": None})
    ch = completion_from_openai(payload, LogprobAsk(requested=False, sent=False, top_k=None)).first
    assert ch.refusal == "content_filter" and ch.text == ""


def test_provider_survives_across_event_loops(server: LoopbackServer) -> None:
    server.handler = lambda r: Reply(body=P.OPENAI_EQUIVALENT)
    provider = make(server, "vllm/m")
    asyncio.run(provider.complete(REQ))  # e.g. a capability check in its own asyncio.run
    c = run(provider, lambda p: p.complete(REQ))  # then the run, in another loop
    assert c.first.text == "Hello!" and len(server.received) == 2
