"""Configuration from the environment: base URLs, keys, key files, errors naming the variable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from probe.completion import ConfigError
from probe.spec import ModelSpec
from providers import create_provider, known_providers
from providers.hosts import PROFILES


def test_every_provider_name_of_the_issue_is_known() -> None:
    names = {i.name for i in known_providers()} | {a for i in known_providers() for a in i.aliases}
    assert {"openai", "anthropic", "google", "gemini", "vllm", "llamacpp", "ollama", "lmstudio", "together",
            "fireworks", "deepseek", "openrouter", "azure", "groq", "mistral", "openai-compatible", "sim"} <= names


def test_unknown_provider_is_a_config_error_naming_the_fallback() -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'nope'.*OPENAI_COMPATIBLE_BASE_URL"):
        create_provider(ModelSpec.parse("nope/m"), env={})


@pytest.mark.parametrize(("model", "variable"), [
    ("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic/claude-x", "ANTHROPIC_API_KEY"),
    ("google/gemini-2.0-flash", "GOOGLE_API_KEY"), ("gemini/gemini-2.0-flash", "GEMINI_API_KEY"),
    ("together/m", "TOGETHER_API_KEY"), ("fireworks/m", "FIREWORKS_API_KEY"), ("deepseek/m", "DEEPSEEK_API_KEY"),
    ("openrouter/m", "OPENROUTER_API_KEY"), ("groq/m", "GROQ_API_KEY"), ("mistral/m", "MISTRAL_API_KEY"),
    ("openai-responses/m", "OPENAI_RESPONSES_API_KEY"),
])
def test_missing_key_names_the_variable(model: str, variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        create_provider(ModelSpec.parse(model), env={})


def test_vendor_variables_and_provider_variables() -> None:
    p = create_provider(ModelSpec.parse("openai/gpt-4o-mini"), env={"OPENAI_API_KEY": "sk-1"})
    assert p.base_url == "https://api.openai.com/v1"
    assert p.connection_key == "openai|https://api.openai.com/v1|gpt-4o-mini"
    p = create_provider(ModelSpec.parse("openai-compatible/my-model"),
                        env={"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:9999/v1/"})
    assert p.base_url == "http://127.0.0.1:9999/v1" and p.capabilities.logprobs
    p = create_provider(ModelSpec(provider="vllm", model="m", base_url="http://127.0.0.1:1/v1"),
                        env={"VLLM_BASE_URL": "http://127.0.0.1:2/v1"})
    assert p.base_url == "http://127.0.0.1:1/v1"  # the spec's own URL wins


def test_missing_base_url() -> None:
    with pytest.raises(ConfigError, match="OPENAI_COMPATIBLE_BASE_URL"):
        create_provider(ModelSpec.parse("openai-compatible/m"), env={})
    with pytest.raises(ConfigError, match="AZURE_BASE_URL"):
        create_provider(ModelSpec.parse("azure/d"), env={"AZURE_OPENAI_API_KEY": "k"})
    with pytest.raises(ConfigError, match="not an http"):
        create_provider(ModelSpec.parse("vllm/m"), env={"VLLM_BASE_URL": "localhost:8000"})


def test_sim_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    p = create_provider(ModelSpec.parse("sim/calibrated"), env={})
    assert p.base_url == "http://127.0.0.1:8765/v1" and p.wire_model == "sim-calibrated"
    p = create_provider(ModelSpec.parse("sim/sim-calibrated"), env={"SIM_BASE_URL": "http://127.0.0.1:1/v1"})
    assert p.wire_model == "sim-calibrated" and p.base_url == "http://127.0.0.1:1/v1"
    monkeypatch.setenv("SIM_BASE_URL", "http://127.0.0.1:7/v1")
    assert create_provider(ModelSpec.parse("sim/x")).base_url == "http://127.0.0.1:7/v1"  # os.environ by default


def test_key_file_0600_is_read_and_a_readable_one_refused(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-from-file\n")
    os.chmod(key, 0o600)
    p = create_provider(ModelSpec.parse("openai/m"), env={"OPENAI_API_KEY_FILE": str(key)})
    assert p.redact("x sk-from-file y") == "x [redacted] y"
    os.chmod(key, 0o644)
    with pytest.raises(ConfigError, match=r"OPENAI_API_KEY_FILE: key file .* readable by group/others \(mode 0644\)"):
        create_provider(ModelSpec.parse("openai/m"), env={"OPENAI_API_KEY_FILE": str(key)})
    with pytest.raises(ConfigError, match="cannot read key file"):
        create_provider(ModelSpec.parse("openai/m"), env={"OPENAI_API_KEY_FILE": str(tmp_path / "none")})


def test_bad_timeout_variable() -> None:
    with pytest.raises(ConfigError, match="PROBE_TIMEOUT_S"):
        create_provider(ModelSpec.parse("vllm/m"), env={"PROBE_TIMEOUT_S": "soon"})


def test_static_capabilities_follow_the_profiles() -> None:
    for name, profile in PROFILES.items():
        env = {"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:1", "AZURE_BASE_URL": "http://127.0.0.1:1"}
        for var in profile.key_vars or (f"{name.upper().replace('-', '_')}_API_KEY",):
            env[var] = "k"
        env[f"{name.upper().replace('-', '_')}_API_KEY"] = "k"
        caps = create_provider(ModelSpec(provider=name, model="m"), env=env).capabilities
        assert (caps.logprobs, caps.max_top_logprobs, caps.supports_n) == (
            profile.logprobs, profile.max_top_logprobs, profile.supports_n)
    assert not PROFILES["anthropic"].logprobs and not PROFILES["groq"].logprobs
    assert PROFILES["fireworks"].max_top_logprobs == 5


def test_public_surface_is_exactly_the_intended_names() -> None:
    import providers

    assert sorted(providers.__all__) == sorted([
        "AdaptiveLimiter", "Capabilities", "CapabilityReport", "LimiterPool", "Provider", "ProviderInfo",
        "RetryPolicy", "call_with_retry", "create_provider", "known_providers", "probe_capabilities"])
    assert all(hasattr(providers, n) for n in providers.__all__)


def test_credentials_in_a_base_url_stay_out_of_keys_and_reprs() -> None:
    p = create_provider(ModelSpec.parse("vllm/m"), env={"VLLM_BASE_URL": "http://user:s3cret-pass@127.0.0.1:8000/v1"})
    assert p.connection_key == "vllm|http://127.0.0.1:8000/v1|m"
    assert "s3cret" not in repr(p) and p.redact("url http://user:s3cret-pass@h") == "url http://[redacted]:[redacted]@h"
