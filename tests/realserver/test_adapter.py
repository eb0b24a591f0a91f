"""probe's llamacpp adapter against the real server: it agrees with the official SDK token for token and
handles each quirk (null logprobs without top_logprobs, n ignored, 500 validation errors, FastAPI 401)."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping

import pytest

from probe.completion import CallFailure, ChatRequest, Completion, Message, ProviderError
from probe.spec import ModelSpec
from providers import RetryPolicy, call_with_retry, create_provider
from tests.realserver._wire import MODEL, QUESTION, Row, chat_body, post, raw_rows, sdk, sdk_rows
from tests.realserver.server import LlamaServer

pytestmark = pytest.mark.realserver

SPEC = ModelSpec.parse(f"llamacpp/{MODEL}")
# A server-side file path as llama-cpp-python puts it in its 500 bodies: File "/abs/…/app.py", line N
_SERVER_PATH = re.compile(r'File \\?"/|site-packages|llama_cpp/server')


def _request(**fields: object) -> ChatRequest:
    base: dict[str, object] = {
        "messages": (Message(role="user", content=QUESTION),), "max_tokens": 3, "temperature": 0.0,
    }
    return ChatRequest.model_validate({**base, **fields})


def _complete(url: str, req: ChatRequest, env: Mapping[str, str] | None = None) -> Completion:
    async def go() -> Completion:
        provider = create_provider(SPEC, env={"LLAMACPP_BASE_URL": url, **(env or {})})
        try:
            return await provider.complete(req)
        finally:
            await provider.aclose()

    return asyncio.run(go())


def _failure(url: str, req: ChatRequest, env: Mapping[str, str] | None = None) -> CallFailure:
    with pytest.raises(ProviderError) as caught:
        _complete(url, req, env)
    return caught.value.failure


def _rows(completion: Completion) -> list[Row]:
    tokens = completion.first.tokens
    assert tokens is not None
    return [(t.token, t.logprob, tuple((a.token, a.logprob) for a in t.top)) for t in tokens]


def test_adapter_and_sdk_agree_on_every_token_and_logprob(base_url: str) -> None:
    req = _request(max_tokens=4, logprobs=True, top_logprobs=5)
    body = chat_body(max_tokens=4, logprobs=True, top_logprobs=5)
    post(base_url + "/chat/completions", body)  # warm the prompt cache so every later call evaluates alike
    ours = _complete(base_url, req)
    theirs = sdk(base_url).chat.completions.create(**body)
    raw = post(base_url + "/chat/completions", body).json()

    assert _rows(ours) == sdk_rows(theirs) == raw_rows(raw)  # exact floats, same order
    assert len(_rows(ours)) == 4
    assert ours.first.text == theirs.choices[0].message.content
    assert ours.first.logprob_state == "available"
    assert ours.first.finish_reason == theirs.choices[0].finish_reason == "length"
    assert ours.model_reported == theirs.model == MODEL
    assert theirs.usage is not None
    assert ours.usage.input_tokens == theirs.usage.prompt_tokens
    assert ours.usage.output_tokens == theirs.usage.completion_tokens == 4
    assert ours.top_k_requested == 5
    first = ours.first.tokens[0] if ours.first.tokens else None
    assert first is not None and first.bytes is None  # the server sends bytes: null
    assert all(a.logprob is not None and a.logprob > -9999 for a in first.top)


def test_logprobs_without_top_logprobs_still_gives_token_logprobs(base_url: str) -> None:
    """The server answers logprobs=true without top_logprobs with null; the adapter sends top_logprobs."""
    ours = _complete(base_url, _request(logprobs=True))
    assert ours.first.logprob_state == "available"
    assert ours.first.tokens is not None and len(ours.first.tokens) == 3
    # the chosen tokens' logprobs are the server's, with no alternatives kept (none were asked for)
    theirs = sdk(base_url).chat.completions.create(**chat_body(logprobs=True, top_logprobs=1))
    assert [(t, lp) for t, lp, _ in _rows(ours)] == [(t, lp) for t, lp, _ in sdk_rows(theirs)]
    assert all(tok.top == () for tok in ours.first.tokens)


def test_top_logprobs_zero_gives_chosen_token_logprobs(base_url: str) -> None:
    ours = _complete(base_url, _request(logprobs=True, top_logprobs=0))
    assert ours.first.logprob_state == "available"
    assert ours.first.tokens is not None
    assert all(t.logprob is not None and t.logprob < 0 and t.top == () for t in ours.first.tokens)


def test_the_adapter_cap_is_really_honoured(base_url: str) -> None:
    provider = create_provider(SPEC, env={"LLAMACPP_BASE_URL": base_url})
    cap = provider.capabilities.max_top_logprobs
    assert provider.capabilities.logprobs and cap >= 5
    ours = _complete(base_url, _request(max_tokens=1, logprobs=True, top_logprobs=cap))
    assert ours.first.tokens is not None
    assert len(ours.first.tokens[0].top) == cap
    lps = [a.logprob for a in ours.first.tokens[0].top]
    assert all(lp is not None for lp in lps)
    assert sum(math.exp(lp) for lp in lps if lp is not None) <= 1.0 + 1e-6


def test_no_logprobs_asked_means_not_requested(base_url: str) -> None:
    ours = _complete(base_url, _request())
    assert ours.first.logprob_state == "unavailable"
    assert ours.first.logprob_reason == "not_requested"
    assert ours.first.tokens is None
    assert ours.first.text


def test_n_is_fanned_out_because_the_server_ignores_it(llama_server: LlamaServer) -> None:
    provider = create_provider(SPEC, env={"LLAMACPP_BASE_URL": llama_server.base_url})
    assert provider.capabilities.supports_n is False
    before = llama_server.requests_seen()
    ours = _complete(llama_server.base_url, _request(n=3, max_tokens=1, temperature=1.0, seed=11,
                                                     logprobs=True, top_logprobs=2))
    assert len(ours.choices) == 3
    assert [c.index for c in ours.choices] == [0, 1, 2]
    assert llama_server.requests_seen() - before == 3  # three single calls, not one n=3 call
    assert all(c.logprob_state == "available" for c in ours.choices)


def test_validation_500_is_a_bad_request_and_not_retried(llama_server: LlamaServer) -> None:
    # top_p 1.5 passes no probe validation (model_construct); it stands for any value the server rejects.
    req = ChatRequest.model_construct(messages=(Message(role="user", content="x"),), max_tokens=1,
                                      temperature=None, top_p=1.5, n=1, logprobs=False, top_logprobs=None,
                                      seed=None, stop=None)
    url = llama_server.base_url
    failure = _failure(url, req)
    assert failure.kind == "bad_request"  # a 500, but retrying cannot help
    assert failure.status_code == 500
    assert "top_p" in failure.message

    async def with_retry() -> None:
        provider = create_provider(SPEC, env={"LLAMACPP_BASE_URL": url})
        try:
            await call_with_retry(provider, req, RetryPolicy.no_wait(max_attempts=5))
        finally:
            await provider.aclose()

    before = llama_server.requests_seen()
    with pytest.raises(ProviderError):
        asyncio.run(with_retry())
    assert llama_server.requests_seen() - before == 1


def test_server_file_paths_do_not_leak_into_call_failures(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", chat_body(top_p=1.5)).json()["error"]["message"]
    assert _SERVER_PATH.search(raw)  # the server does send one
    req = ChatRequest.model_construct(messages=(Message(role="user", content="x"),), max_tokens=1,
                                      temperature=None, top_p=1.5, n=1, logprobs=False, top_logprobs=None,
                                      seed=None, stop=None)
    failure = _failure(base_url, req)
    assert not _SERVER_PATH.search(failure.message), failure.message


def test_context_overflow_is_a_bad_request(base_url: str) -> None:
    failure = _failure(base_url, ChatRequest(messages=(Message(role="user", content=" A" * 2100),), max_tokens=1))
    assert failure.kind == "bad_request"
    assert failure.status_code == 400
    assert "context" in failure.message


def test_auth_401_is_an_auth_failure_without_the_key(llama_auth_server: LlamaServer, auth_key: str) -> None:
    url = llama_auth_server.base_url
    wrong = "sk-realserver-wrong-" + "0" * 16
    for env in ({}, {"LLAMACPP_API_KEY": wrong}):
        failure = _failure(url, _request(max_tokens=1), env)
        assert failure.kind == "auth"
        assert failure.status_code == 401
        assert "Invalid API key" in failure.message  # FastAPI's {"detail": ...} body is read
        assert wrong not in failure.message and auth_key not in failure.message
    ours = _complete(url, _request(max_tokens=1, logprobs=True, top_logprobs=2), {"LLAMACPP_API_KEY": auth_key})
    assert ours.first.logprob_state == "available"
