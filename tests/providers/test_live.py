"""Live vendor checks: opt-in (PROBE_LIVE_TESTS=1 and the vendor's key), never in CI."""

from __future__ import annotations

import asyncio
import os

import pytest

from probe.completion import ChatRequest, Completion, Message
from probe.spec import ModelSpec
from providers import create_provider

LIVE = [
    ("openai/gpt-4.1-mini", ("OPENAI_API_KEY",), True),
    ("openai-responses/gpt-4.1-mini", ("OPENAI_API_KEY",), True),
    ("google/gemini-2.0-flash", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), True),
    ("anthropic/claude-haiku-4-5", ("ANTHROPIC_API_KEY",), False),
]
REQ = ChatRequest(messages=(Message(role="user", content="Answer with one letter, A or B: which comes first?"),),
                  max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=5)


@pytest.mark.live
@pytest.mark.parametrize(("model", "keys", "has_logprobs"), LIVE, ids=[m for m, _, _ in LIVE])
def test_live_vendor(model: str, keys: tuple[str, ...], has_logprobs: bool) -> None:
    if os.environ.get("PROBE_LIVE_TESTS") != "1":
        pytest.skip("live API tests are opt-in: set PROBE_LIVE_TESTS=1")
    if not any(os.environ.get(k) for k in keys):
        pytest.skip(f"needs {' or '.join(keys)}")
    provider = create_provider(ModelSpec.parse(model), env=dict(os.environ))

    async def go() -> Completion:
        try:
            return await provider.complete(REQ)
        finally:
            await provider.aclose()

    c = asyncio.run(go())
    assert c.first.text.strip()
    if has_logprobs:
        assert c.first.logprob_state in ("available", "partial", "unavailable")
        if c.first.tokens:
            assert all(t.logprob is None or t.logprob <= 0 for t in c.first.tokens)
    else:
        assert c.first.logprob_reason == "provider_has_none"
