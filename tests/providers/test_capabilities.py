"""``probe_capabilities`` and the ``probe providers`` CLI against a real loopback server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from probe.cli.providers import app
from probe.spec import ModelSpec
from providers import create_provider
from providers.base import Provider
from providers.capabilities import CapabilityCache, CapabilityReport, probe_capabilities
from tests.providers import payloads as P
from tests.providers.conftest import FIXTURES
from tests.providers.loopback import LoopbackServer, Reply

ROOT = Path(__file__).resolve().parents[2]


def fixture(folder: str, name: str) -> Any:
    return json.loads((FIXTURES / folder / f"{name}.json").read_text())


def check(provider: Provider, cache: CapabilityCache, refresh: bool = False) -> CapabilityReport:
    async def go() -> CapabilityReport:
        try:
            return await probe_capabilities(provider, cache=cache, refresh=refresh)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def test_llama_server_report_and_cache(server: LoopbackServer, tmp_path: Path) -> None:
    server.handler = lambda r: Reply(body=fixture("llama-server", "chat_n2"))
    cache = CapabilityCache(tmp_path / "caps.json")
    env = {"VLLM_BASE_URL": server.url + "/v1"}
    report = check(create_provider(ModelSpec.parse("vllm/tiny"), env=env), cache)
    sent = server.received[0].json
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5 and sent["n"] == 2 and sent["temperature"] == 0.7
    assert sent["max_tokens"] == 1
    assert report.logprobs and report.logprob_state == "available"
    assert (report.top_k_requested, report.top_k_returned, report.top_k_honoured) == (5, 2, False)
    assert (report.n_returned, report.n_supported, report.temperature_accepted) == (2, True, True)
    assert report.requests == 1 and report.error is None
    # cached: neither this process (memory) nor a fresh one (file) asks again
    again = check(create_provider(ModelSpec.parse("vllm/tiny"), env=env), cache)
    assert again == report and len(server.received) == 1
    from providers.capabilities import clear_memo

    clear_memo()
    assert check(create_provider(ModelSpec.parse("vllm/tiny"), env=env), cache) == report
    assert len(server.received) == 1
    check(create_provider(ModelSpec.parse("vllm/tiny"), env=env), cache, refresh=True)
    assert len(server.received) == 2


def test_host_that_ignores_n_and_drops_logprobs(server: LoopbackServer, tmp_path: Path) -> None:
    server.handler = lambda r: Reply(body=P.OLLAMA_SILENT_DROP)
    report = check(create_provider(ModelSpec.parse("openai-compatible/x"),
                                   env={"OPENAI_COMPATIBLE_BASE_URL": server.url + "/v1"}), CapabilityCache(tmp_path / "c"))
    assert not report.logprobs and report.logprob_reason == "endpoint_dropped"
    assert report.n_supported is False and any("ignores n" in n for n in report.notes)


def test_n_rejected_then_checked_without(server: LoopbackServer, tmp_path: Path) -> None:
    server.queue(Reply(status=400, body={"error": {"code": 400, "message": "Only one completion choice is allowed",
                                                   "type": "invalid_request_error"}}),
                 Reply(body=fixture("llama-server", "chat_logprobs_top5")))
    report = check(create_provider(ModelSpec.parse("vllm/m"), env={"VLLM_BASE_URL": server.url + "/v1"}),
                   CapabilityCache(tmp_path / "c"))
    assert [r.json.get("n") for r in server.received] == [2, None]
    assert report.n_supported is False and report.logprobs and report.top_k_honoured is True
    assert report.requests == 2


def test_provider_without_logprobs_and_refusing_temperature(server: LoopbackServer, tmp_path: Path) -> None:
    server.queue(Reply(status=400, body=P.OPENAI_TEMPERATURE_400), Reply(body=P.OLLAMA_SILENT_DROP))
    report = check(create_provider(ModelSpec.parse("groq/m"), env={"GROQ_BASE_URL": server.url, "GROQ_API_KEY": "g"}),
                   CapabilityCache(tmp_path / "c"))
    assert (report.logprobs, report.logprob_reason) == (False, "provider_has_none")
    assert report.temperature_accepted is False and report.dropped_params == ("temperature",)
    assert "logprobs" not in server.received[0].json


def test_failed_check_is_reported_not_cached(server: LoopbackServer, tmp_path: Path) -> None:
    server.handler = lambda r: Reply(status=401, body={"detail": "Invalid API key"})
    cache = CapabilityCache(tmp_path / "c.json")
    env = {"VLLM_BASE_URL": server.url + "/v1", "VLLM_API_KEY": "wrong-key-value"}
    report = check(create_provider(ModelSpec.parse("vllm/m"), env=env), cache)
    assert report.error_kind == "auth" and "check VLLM_API_KEY" in (report.error or "")
    assert not (tmp_path / "c.json").exists()
    check(create_provider(ModelSpec.parse("vllm/m"), env=env), cache)
    assert len(server.received) == 2


def test_cli_check_json_and_text(server: LoopbackServer, tmp_path: Path) -> None:
    server.handler = lambda r: Reply(body=fixture("llama-server", "chat_logprobs_top5"))
    runner = CliRunner()
    env = {"LLAMACPP_BASE_URL": server.url + "/v1"}
    out = runner.invoke(app, ["check", "llamacpp/tiny", "--json", "--cache", str(tmp_path / "c.json")], env=env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["logprobs"] is True and data["top_k_requested"] == 5 and data["n_requested"] == 1
    assert data["n_supported"] is False  # llama-cpp-python ignores n: the profile fans out instead
    out = runner.invoke(app, ["check", "llamacpp/tiny", "--cache", str(tmp_path / "c.json")], env=env)
    assert out.exit_code == 0 and "(cached)" in out.output and "logprobs: yes" in out.output
    assert len(server.received) == 1


def test_cli_list_json() -> None:
    out = CliRunner().invoke(app, ["list", "--json"])
    assert out.exit_code == 0
    rows = {r["name"]: r for r in json.loads(out.output)}
    assert rows["google"]["aliases"] == ["gemini"] and rows["sim"]["default_base_url"] == "http://127.0.0.1:8765/v1"
    assert rows["together"]["key_variables"] == ["TOGETHER_API_KEY"] and rows["groq"]["logprobs"] is False
    text = CliRunner().invoke(app, ["list"])
    assert text.exit_code == 0 and "openrouter" in text.output and "fireworks" in text.output


def test_cli_missing_key_exits_2_without_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PROBE_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", "from probe.cli import main; main()", "providers", "check",
                           "openai/gpt-4o-mini"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr and "Traceback" not in done.stderr
