"""Gemini generateContent over real HTTP on 127.0.0.1: parameters, 0.0 logprobs, refusals, 429 delays."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from probe.completion import ChatRequest, Completion, Message, ProviderError
from probe.spec import ModelSpec
from providers import create_provider
from providers.google_gemini import completion_from_gemini, gemini_request
from providers.openai_chat import LogprobAsk
from tests.providers import payloads as P
from tests.providers.loopback import LoopbackServer, Reply

REQ = ChatRequest(messages=(Message(role="system", content="Be brief."), Message(role="user", content="Yes or no?"),
                            Message(role="assistant", content="Yes"), Message(role="user", content="Sure?")),
                  max_tokens=2, temperature=0.5, top_p=0.9, logprobs=True, top_logprobs=3, seed=1, n=2)


def call(server: LoopbackServer, req: ChatRequest = REQ, model: str = "google/gemini-2.0-flash",
         **env: str) -> Completion:
    provider = create_provider(ModelSpec.parse(model), env={"GOOGLE_BASE_URL": server.url + "/v1beta",
                                                            "GEMINI_BASE_URL": server.url + "/v1beta",
                                                            "GEMINI_API_KEY": "g-key", **env})

    async def go() -> Completion:
        try:
            return await provider.complete(req)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def test_request_shape() -> None:
    assert gemini_request(REQ, top_logprobs=3) == {
        "contents": [{"role": "user", "parts": [{"text": "Yes or no?"}]},
                     {"role": "model", "parts": [{"text": "Yes"}]},
                     {"role": "user", "parts": [{"text": "Sure?"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"temperature": 0.5, "topP": 0.9, "maxOutputTokens": 2, "candidateCount": 2,
                             "seed": 1, "responseLogprobs": True, "logprobs": 3},
    }
    assert "responseLogprobs" not in gemini_request(REQ, top_logprobs=None)["generationConfig"]


def test_round_trip_with_key_header_and_alias(server: LoopbackServer) -> None:
    server.queue(Reply(body=P.GEMINI_EQUIVALENT))
    c = call(server, model="gemini/gemini-2.0-flash")
    got = server.received[0]
    assert got.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert got.headers["x-goog-api-key"] == "g-key" and got.query == {}
    assert got.json["generationConfig"]["logprobs"] == 3
    assert c.first.text == "Hello!" and c.model_reported == "gemini-2.0-flash"
    assert c.first.tokens is not None and [t.id for t in c.first.tokens] == [9906, 9907]
    assert (c.usage.input_tokens, c.usage.output_tokens) == (3, 2)


def test_zero_logprob_is_kept() -> None:
    ch = completion_from_gemini(P.GEMINI_ZERO_LOGPROB, LogprobAsk(requested=True, sent=True, top_k=2)).first
    assert ch.tokens is not None
    assert ch.tokens[0].logprob == 0.0  # omitted by proto3 JSON at its default value
    assert ch.tokens[0].top[0].logprob == 0.0 and ch.tokens[0].top[1].logprob == -25.5
    assert ch.logprob_state == "available"
    explicit_null: Any = {"candidates": [{"content": {"parts": [{"text": "Yes"}]}, "logprobsResult": {
        "chosenCandidates": [{"token": "Yes", "logProbability": None}], "topCandidates": []}}]}
    ch = completion_from_gemini(explicit_null, LogprobAsk(requested=True, sent=True, top_k=0)).first
    assert ch.tokens is not None and ch.tokens[0].logprob is None and ch.logprob_state == "partial"


def test_avg_logprobs_alone_is_not_token_data() -> None:
    ch = completion_from_gemini(P.GEMINI_AVG_ONLY, LogprobAsk(requested=True, sent=True, top_k=3)).first
    assert (ch.logprob_state, ch.logprob_reason, ch.tokens) == ("unavailable", "endpoint_dropped", None)


@pytest.mark.parametrize("body", [P.GEMINI_LOGPROBS_400, P.GEMINI_LOGPROBS_400_SUPPORTED])
def test_logprobs_not_supported_becomes_model_refused(server: LoopbackServer, body: Any) -> None:
    server.queue(Reply(status=400, body=body), Reply(body=P.GEMINI_AVG_ONLY))
    c = call(server)
    assert "responseLogprobs" in server.received[0].json["generationConfig"]
    assert "responseLogprobs" not in server.received[1].json["generationConfig"]
    assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "model_refused")


def test_429_retry_delay_from_body(server: LoopbackServer) -> None:
    server.queue(Reply(status=429, body=P.GEMINI_429))
    with pytest.raises(ProviderError) as e:
        call(server)
    assert e.value.kind == "rate_limit" and e.value.failure.retry_after == 47.0


def test_daily_quota_fails_fast(server: LoopbackServer) -> None:
    server.queue(Reply(status=429, body=P.GEMINI_429_DAILY))
    with pytest.raises(ProviderError) as e:
        call(server)
    assert e.value.kind == "quota"


def test_blocked_prompt_is_a_refusal_and_safety_finish_is_recorded(server: LoopbackServer) -> None:
    server.queue(Reply(body={"promptFeedback": {"blockReason": "SAFETY"}}))
    with pytest.raises(ProviderError) as e:
        call(server)
    assert e.value.kind == "refusal"
    blocked = {"candidates": [{"content": {"parts": []}, "finishReason": "SAFETY"}]}
    ch = completion_from_gemini(blocked, LogprobAsk(requested=False, sent=False, top_k=None)).first
    assert ch.refusal == "blocked: SAFETY" and ch.text == ""


def test_missing_key_fails_before_any_request(server: LoopbackServer) -> None:
    from probe.completion import ConfigError

    with pytest.raises(ConfigError, match=r"GOOGLE_API_KEY.*GEMINI_API_KEY"):
        create_provider(ModelSpec.parse("google/gemini-2.0-flash"), env={"GOOGLE_BASE_URL": server.url})
    assert server.received == []
