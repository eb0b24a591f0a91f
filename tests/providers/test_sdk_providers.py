"""The SDK-based adapters (Anthropic Messages, OpenAI Responses) against respx-mocked HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import respx

from probe.completion import ChatRequest, Completion, Message, ProviderError
from probe.spec import ModelSpec
from providers import create_provider
from providers.base import Provider
from tests.providers import payloads as P

ANT = "http://anthropic.test"
OAI = "http://openai.test/v1"
REQ = ChatRequest(messages=(Message(role="system", content="Be brief."), Message(role="user", content="A or B?")),
                  max_tokens=1, temperature=0.7, top_p=0.9, logprobs=True, top_logprobs=3)


def run(provider: Provider, req: ChatRequest = REQ) -> Completion:
    async def go() -> Completion:
        try:
            return await provider.complete(req)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def anthropic() -> Provider:
    return create_provider(ModelSpec.parse("anthropic/claude-test-1"),
                           env={"ANTHROPIC_API_KEY": "ant-key", "ANTHROPIC_BASE_URL": ANT})


def responses() -> Provider:
    return create_provider(ModelSpec.parse("openai-responses/gpt-4.1-mini"),
                           env={"OPENAI_API_KEY": "oai-key", "OPENAI_BASE_URL": OAI})


def body_of(call: Any) -> dict[str, Any]:
    return json.loads(call.request.content)


@respx.mock(assert_all_called=True)
def test_anthropic_messages(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{ANT}/v1/messages").mock(return_value=httpx.Response(200, json=P.ANTHROPIC_MESSAGE))
    c = run(anthropic())
    sent = body_of(route.calls[0])
    assert sent == {"model": "claude-test-1", "max_tokens": 1, "system": "Be brief.",
                    "messages": [{"role": "user", "content": "A or B?"}], "temperature": 0.7, "top_p": 0.9}
    headers = route.calls[0].request.headers
    assert headers.get("x-api-key") == "ant-key" or headers.get("authorization") == "Bearer ant-key"
    assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "provider_has_none")
    assert c.first.text == "B" and c.model_reported == "claude-sonnet-4-5-20250929"


@respx.mock
def test_anthropic_rejected_temperature_dropped_and_remembered(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{ANT}/v1/messages").mock(side_effect=[
        httpx.Response(400, json=P.ANTHROPIC_BOTH_400),
        httpx.Response(400, json=P.ANTHROPIC_TEMPERATURE_400),
        httpx.Response(200, json=P.ANTHROPIC_MESSAGE),
        httpx.Response(200, json=P.ANTHROPIC_MESSAGE),
    ])
    provider = anthropic()

    async def twice() -> tuple[Completion, Completion]:
        try:
            return await provider.complete(REQ), await provider.complete(REQ)
        finally:
            await provider.aclose()

    first, second = asyncio.run(twice())
    sent = [body_of(c) for c in route.calls]
    assert [("temperature" in s, "top_p" in s) for s in sent] == [(True, True), (True, False), (False, False),
                                                                   (False, False)]
    assert first.dropped_params == ("top_p", "temperature") == second.dropped_params


@respx.mock
def test_anthropic_529_and_200_error_body(respx_mock: respx.MockRouter) -> None:
    respx_mock.post(f"{ANT}/v1/messages").mock(side_effect=[
        httpx.Response(529, json=P.ANTHROPIC_529),
        httpx.Response(200, json=P.ANTHROPIC_529),
        httpx.Response(429, json=P.ANTHROPIC_429, headers={"retry-after": "12"}),
        httpx.Response(429, json=P.ANTHROPIC_SPEND),
        httpx.Response(401, json={"type": "error", "error": {"type": "authentication_error",
                                                             "message": "invalid x-api-key"}}),
    ])
    kinds = []
    for _ in range(5):
        with pytest.raises(ProviderError) as e:
            run(anthropic())
        kinds.append((e.value.kind, e.value.failure.retry_after))
    assert kinds == [("overloaded", None), ("overloaded", None), ("rate_limit", 12.0), ("quota", None),
                     ("auth", None)]


@respx.mock
def test_anthropic_sdk_retries_are_off(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{ANT}/v1/messages").mock(return_value=httpx.Response(500, json={
        "type": "error", "error": {"type": "api_error", "message": "boom"}}))
    with pytest.raises(ProviderError) as e:
        run(anthropic())
    assert e.value.kind == "transient" and route.call_count == 1


@respx.mock
def test_anthropic_connection_error_is_transient(respx_mock: respx.MockRouter) -> None:
    respx_mock.post(f"{ANT}/v1/messages").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ProviderError) as e:
        run(anthropic())
    assert e.value.kind == "transient"


@respx.mock
def test_anthropic_n_fans_out(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{ANT}/v1/messages").mock(return_value=httpx.Response(200, json=P.ANTHROPIC_MESSAGE))
    c = run(anthropic(), REQ.model_copy(update={"n": 3}))
    assert route.call_count == 3 and len(c.choices) == 3 and c.usage.input_tokens == 33


@respx.mock
def test_responses_api(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{OAI}/responses").mock(return_value=httpx.Response(200, json=P.RESPONSES_EQUIVALENT))
    c = run(responses())
    sent = body_of(route.calls[0])
    assert sent["include"] == ["message.output_text.logprobs"] and sent["top_logprobs"] == 3
    assert sent["max_output_tokens"] == 16 and sent["input"][0] == {"role": "system", "content": "Be brief."}
    assert route.calls[0].request.headers["authorization"] == "Bearer oai-key"
    assert c.first.text == "Hello!" and c.first.tokens is not None and len(c.first.tokens) == 2


@respx.mock
def test_responses_logprob_refusal(respx_mock: respx.MockRouter) -> None:
    no_lp = json.loads(json.dumps(P.RESPONSES_EQUIVALENT))
    no_lp["output"][0]["content"][0]["logprobs"] = []
    route = respx_mock.post(f"{OAI}/responses").mock(side_effect=[
        httpx.Response(400, json={"error": {"message": "Unsupported parameter: 'top_logprobs' is not supported with "
                                                       "this model.", "type": "invalid_request_error",
                                            "param": "top_logprobs", "code": "unsupported_parameter"}}),
        httpx.Response(200, json=no_lp)])
    c = run(responses())
    assert "include" not in body_of(route.calls[1])
    assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "model_refused")


@respx.mock
def test_responses_without_logprobs_is_endpoint_dropped_and_errors_classified(respx_mock: respx.MockRouter) -> None:
    no_lp = json.loads(json.dumps(P.RESPONSES_EQUIVALENT))
    no_lp["output"][0]["content"][0]["logprobs"] = []
    respx_mock.post(f"{OAI}/responses").mock(side_effect=[
        httpx.Response(200, json=no_lp),
        httpx.Response(429, json=P.OPENAI_429, headers={"retry-after-ms": "250"}),
        httpx.Response(429, json=P.OPENAI_QUOTA)])
    assert run(responses()).first.logprob_reason == "endpoint_dropped"
    with pytest.raises(ProviderError) as e:
        run(responses())
    assert (e.value.kind, e.value.failure.retry_after) == ("rate_limit", 0.25)
    with pytest.raises(ProviderError) as e:
        run(responses())
    assert e.value.kind == "quota"
