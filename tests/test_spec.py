"""ModelSpec parsing: provider/model, where the model part may contain slashes."""

from __future__ import annotations

import pytest

from probe.spec import ModelSpec, ModelSpecError


@pytest.mark.parametrize(
    ("text", "provider", "model"),
    [
        ("openai/gpt-4.1-mini", "openai", "gpt-4.1-mini"),
        ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("google/gemini-2.5-flash", "google", "gemini-2.5-flash"),
        ("vllm/Qwen/Qwen3-8B", "vllm", "Qwen/Qwen3-8B"),
        ("openrouter/meta-llama/llama-3.1-8b-instruct", "openrouter", "meta-llama/llama-3.1-8b-instruct"),
        ("ollama/llama3.2:latest", "ollama", "llama3.2:latest"),
        ("sim/overconfident", "sim", "overconfident"),
        ("OpenAI/gpt-4o", "openai", "gpt-4o"),  # provider is case-insensitive, model is not
        ("  azure-openai/my-deployment  ", "azure-openai", "my-deployment"),
    ],
)
def test_parse(text: str, provider: str, model: str) -> None:
    spec = ModelSpec.parse(text)
    assert (spec.provider, spec.model) == (provider, model)
    assert spec.name == f"{provider}/{model}" == str(spec)
    assert ModelSpec.parse(spec.name) == spec  # the canonical name parses back to the same spec


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("gpt-4.1-mini", "has no provider"),
        ("/gpt-4.1-mini", "has no provider"),
        ("", "has no provider"),
        ("openai/", "empty model name"),
        ("openai/ gpt-4o", "white space"),
        ("open ai/gpt-4o", "not a valid provider name"),
        ("9lives/model", "not a valid provider name"),
        ("open_ai/gpt-4o", "not a valid provider name"),
    ],
)
def test_parse_errors_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ModelSpecError, match=words) as info:
        ModelSpec.parse(text)
    assert repr(text) in str(info.value)  # the message quotes what the user wrote


def test_model_spec_error_is_a_value_error_and_spec_is_frozen() -> None:
    assert issubclass(ModelSpecError, ValueError)
    spec = ModelSpec.parse("openai/gpt-4o")
    with pytest.raises(ValueError, match="frozen"):
        spec.model = "other"  # type: ignore[misc]


def test_limits_are_validated() -> None:
    assert ModelSpec(provider="openai", model="m", concurrency=8, rpm=60).concurrency == 8
    with pytest.raises(ValueError, match="concurrency"):
        ModelSpec(provider="openai", model="m", concurrency=0)
    with pytest.raises(ValueError, match="rpm"):
        ModelSpec(provider="openai", model="m", rpm=0)
