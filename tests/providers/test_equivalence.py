"""Every adapter returns the same normalized tokens for the same token/logprob content."""

from __future__ import annotations

import pytest

from probe.completion import Completion
from providers.anthropic_messages import completion_from_anthropic
from providers.google_gemini import completion_from_gemini
from providers.openai_chat import LogprobAsk, completion_from_openai
from providers.openai_responses import completion_from_responses
from tests.providers import payloads as P
from tests.providers.sdkcheck import sdk_view

ASK = LogprobAsk(requested=True, sent=True, top_k=3)


def _content(c: Completion) -> list[tuple[str, float | None, list[tuple[str, float | None]]]]:
    ch = c.first
    assert ch.tokens is not None
    return [(t.token, t.logprob, [(a.token, a.logprob) for a in t.top]) for t in ch.tokens]


EXPECTED = [(tok, lp, [(a, v) for a, v, _ in alts]) for tok, lp, _, alts in P.CONTENT]

ADAPTERS = {
    "openai-chat": lambda: completion_from_openai(P.OPENAI_EQUIVALENT, ASK),
    "llama-server": lambda: completion_from_openai(P.LLAMA_SERVER_EQUIVALENT, ASK),
    "together-legacy": lambda: completion_from_openai(P.TOGETHER_EQUIVALENT, ASK),
    "fireworks": lambda: completion_from_openai(P.FIREWORKS_NEW_LOGPROBS, ASK),
    "openai-responses": lambda: completion_from_responses(P.RESPONSES_EQUIVALENT, ASK),
    "gemini": lambda: completion_from_gemini(P.GEMINI_EQUIVALENT, ASK),
}


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_same_content_same_tokens(name: str) -> None:
    c = ADAPTERS[name]()
    assert _content(c) == EXPECTED
    ch = c.first
    assert ch.text == P.TEXT
    assert (ch.logprob_state, ch.logprob_reason) == ("available", None)
    assert c.top_k_requested == 3


def test_bytes_where_the_wire_has_them() -> None:
    for name in ("openai-chat", "llama-server", "fireworks", "openai-responses"):
        tokens = ADAPTERS[name]().first.tokens
        assert tokens is not None
        assert [t.bytes for t in tokens] == [tuple(b) for _, _, b, _ in P.CONTENT], name
    for name in ("together-legacy", "gemini"):
        tokens = ADAPTERS[name]().first.tokens
        assert tokens is not None and all(t.bytes is None for t in tokens)


def test_responses_payload_agrees_with_the_sdk() -> None:
    assert sdk_view(P.RESPONSES_EQUIVALENT) == [[(t, lp, tuple(alts)) for t, lp, alts in EXPECTED]]


def test_anthropic_never_claims_logprobs() -> None:
    c = completion_from_anthropic(P.ANTHROPIC_MESSAGE, logprobs_requested=True)
    assert (c.first.logprob_state, c.first.logprob_reason, c.first.tokens) == ("unavailable", "provider_has_none", None)
    assert c.first.text == "B" and c.usage.input_tokens == 11
    # if a Messages response ever carried logprobs in the chat shape, they would be read
    with_lp = dict(P.ANTHROPIC_MESSAGE, content=[{"type": "text", "text": P.TEXT}],
                   logprobs=P.OPENAI_EQUIVALENT["choices"][0]["logprobs"])
    assert _content(completion_from_anthropic(with_lp, logprobs_requested=True)) == EXPECTED
