"""A planted canary key never leaks: 401, 500 and malformed bodies that even echo it back, every adapter.

The loopback server reflects the request's credentials into its answers (the worst case); the test
then looks for the canary in exception text and reprs, formatted tracebacks, CallFailure dumps, log
records at DEBUG from every logger, captured stdout/stderr, the CLI's output and every file written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from probe.cli.providers import app
from probe.completion import ChatRequest, Message, ProviderError
from probe.spec import ModelSpec
from providers import RetryPolicy, call_with_retry, create_provider
from providers.capabilities import CapabilityCache, probe_capabilities
from tests.providers.loopback import LoopbackServer, Received, Reply

CANARY = "sk-CANARY-7f3a9c1e5b2d4f6a8c0e"
REQ = ChatRequest(messages=(Message(role="user", content="hi"),), max_tokens=1, logprobs=True, top_logprobs=2)


def _creds(r: Received) -> str:
    return " ".join(f"{k}: {v}" for k, v in r.headers.items()) + f" query={r.query}"


def echo_401(r: Received) -> Reply:
    return Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {CANARY}. Seen: {_creds(r)}",
                                             "type": "invalid_request_error", "code": "invalid_api_key"},
                                   "type": "error"})


def echo_500(r: Received) -> Reply:
    return Reply(status=500, body=f"Internal Server Error while handling {_creds(r)}", content_type="text/plain")


def echo_malformed(r: Received) -> Reply:
    return Reply(status=200, body='{"choices": [{"message": ' + json.dumps(_creds(r)), content_type="application/json")


def echo_200_error(r: Received) -> Reply:
    return Reply(status=200, body={"type": "error", "error": {"type": "api_error", "message": _creds(r)}})


def echo_bad_shape(r: Received) -> Reply:
    return Reply(status=200, body={"choices": [{"message": {"content": 5}}], "candidates": 5, "output": 5,
                                   "content": 5, "echo": _creds(r)})


HANDLERS = [echo_401, echo_500, echo_malformed, echo_200_error, echo_bad_shape]

MODELS: dict[str, dict[str, str]] = {
    "openai/gpt-4o-mini": {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": "{url}/v1"},
    "vllm/m": {"VLLM_API_KEY": CANARY, "VLLM_BASE_URL": "{url}/v1"},
    "azure/dep": {"AZURE_OPENAI_API_KEY": CANARY, "AZURE_OPENAI_ENDPOINT": "{url}"},
    "google/gemini-2.0-flash": {"GEMINI_API_KEY": CANARY, "GOOGLE_BASE_URL": "{url}/v1beta"},
    "anthropic/claude-test-1": {"ANTHROPIC_API_KEY": CANARY, "ANTHROPIC_BASE_URL": "{url}"},
    "openai-responses/gpt-4.1-mini": {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": "{url}/v1"},
}


def _leaks(text: str) -> bool:
    return CANARY in text or CANARY[3:] in text


@pytest.mark.parametrize("model", list(MODELS))
def test_canary_never_leaks(model: str, server: LoopbackServer, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                            capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.chdir(tmp_path)
    env = {k: v.format(url=server.url) for k, v in MODELS[model].items()}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    seen: list[str] = []

    def record(exc: BaseException) -> None:
        seen.extend([str(exc), repr(exc), "".join(traceback.format_exception(exc))])
        if isinstance(exc, ProviderError):
            seen.append(exc.failure.model_dump_json())

    for handler in HANDLERS:
        server.replies.clear()
        server.handler = handler
        provider = create_provider(ModelSpec.parse(model), env=env)
        seen.append(repr(provider))

        with pytest.raises(ProviderError) as e:
            asyncio.run(_call(provider))
        record(e.value)

    cache = CapabilityCache(tmp_path / "caps.json")
    provider = create_provider(ModelSpec.parse(model), env=env)
    server.handler = echo_401
    report = asyncio.run(_check(provider, cache))
    assert report.error_kind == "auth"
    seen.append(report.model_dump_json())
    cli = CliRunner().invoke(app, ["check", model, "--json", "--cache", str(tmp_path / "cli.json")], env=env)
    seen.append(cli.output + str(cli.exception or ""))

    # the key did reach the server (so the test is real) ...
    assert any(_leaks(_creds(r)) for r in server.received)
    # ... and nothing the client produced carries it
    captured = capsys.readouterr()
    seen.extend([captured.out, captured.err])
    seen.extend(rec.getMessage() + str(rec.args) for rec in caplog.records)
    seen.extend(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert len(seen) > 20
    leaks = [s for s in seen if _leaks(s)]
    assert not leaks, leaks[0][:500]
    assert any("[redacted]" in s for s in seen)  # the echoed key was there and was masked


async def _no_sleep(_: float) -> None:
    return None


async def _call(provider: Any) -> None:
    try:
        await call_with_retry(provider, REQ, RetryPolicy.no_wait(max_attempts=2), sleep=_no_sleep)
    finally:
        await provider.aclose()


async def _check(provider: Any, cache: CapabilityCache) -> Any:
    try:
        return await probe_capabilities(provider, cache=cache)
    finally:
        await provider.aclose()
