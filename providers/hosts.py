"""Host profiles: who you talk to (URL, key variables, caps, quirks), separate from the wire format.

One wire format (OpenAI Chat Completions) serves many hosts; each host is a small profile here.
Anthropic, Google and the OpenAI Responses API have their own wire formats (``family``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Family = Literal["openai-chat", "openai-responses", "anthropic", "google"]
AuthStyle = Literal["bearer", "api-key", "x-goog-api-key", "sdk"]


class HostProfile(BaseModel):
    """Static facts about one provider name: where it lives, how to authenticate, what it can do."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Provider name as written in provider/model.")
    family: Family = Field(description="Wire format / adapter family.")
    description: str = Field(description="One line for `probe providers list`.")
    default_base_url: str | None = Field(description="Base URL when no variable sets one; None: must be set.")
    base_url_vars: tuple[str, ...] = Field(default=(), description="Vendor base-URL variables, after <NAME>_BASE_URL.")
    key_vars: tuple[str, ...] = Field(default=(), description="Vendor key variables, after <NAME>_API_KEY.")
    key_required: bool = Field(description="Whether a call without a key is refused before sending.")
    auth: AuthStyle = Field(default="bearer", description="How the key is sent.")
    logprobs: bool = Field(description="Whether the API can return token logprobs at all.")
    max_top_logprobs: int = Field(ge=0, description="Largest top_logprobs the host accepts.")
    supports_n: bool = Field(description="Whether one call can return n > 1 choices.")
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens", description="Name of the token-cap parameter on the wire."
    )
    legacy_logprobs_request: bool = Field(
        default=False, description="Send logprobs as an integer k (Together) instead of logprobs+top_logprobs."
    )
    min_top_logprobs: int = Field(
        default=0, description="Send at least this top_logprobs when logprobs are wanted (llama.cpp)."
    )
    require_parameters: bool = Field(
        default=False, description="Send provider.require_parameters=true so logprobs are not dropped (OpenRouter)."
    )
    model_prefix: str = Field(default="", description="Prefix added to the model name on the wire (sim).")
    azure: bool = Field(default=False, description="Azure deployment URLs and api-version.")
    quirks: tuple[str, ...] = Field(default=(), description="Known quirks, for humans.")


_OPENAI_URL = "https://api.openai.com/v1"


def _compat(name: str, description: str, url: str | None, *, key_required: bool, logprobs: bool = True,
            top: int = 20, n: bool = True, **extra: object) -> HostProfile:
    return HostProfile.model_validate({
        "name": name, "family": "openai-chat", "description": description, "default_base_url": url,
        "key_required": key_required, "logprobs": logprobs, "max_top_logprobs": top if logprobs else 0,
        "supports_n": n, **extra,
    })


PROFILES: dict[str, HostProfile] = {p.name: p for p in (
    _compat("openai", "OpenAI Chat Completions", _OPENAI_URL, key_required=True,
            base_url_vars=("OPENAI_BASE_URL",), key_vars=("OPENAI_API_KEY",),
            max_tokens_field="max_completion_tokens",
            quirks=("reasoning models refuse logprobs (400 unsupported_parameter / 403): re-sent without",)),
    HostProfile(name="openai-responses", family="openai-responses",
                description="OpenAI Responses API (official SDK; include message.output_text.logprobs)",
                default_base_url=_OPENAI_URL, base_url_vars=("OPENAI_BASE_URL",), key_vars=("OPENAI_API_KEY",),
                key_required=True, auth="sdk", logprobs=True, max_top_logprobs=20, supports_n=False,
                quirks=("max_output_tokens is raised to the API minimum of 16",)),
    HostProfile(name="anthropic", family="anthropic", description="Anthropic Messages (official SDK); no logprobs",
                default_base_url="https://api.anthropic.com", base_url_vars=("ANTHROPIC_BASE_URL",),
                key_vars=("ANTHROPIC_API_KEY",), key_required=True, auth="sdk", logprobs=False,
                max_top_logprobs=0, supports_n=False,
                quirks=("newer models reject temperature/top_p: dropped and recorded",)),
    HostProfile(name="google", family="google", description="Google Gemini generateContent (alias: gemini)",
                default_base_url="https://generativelanguage.googleapis.com/v1beta",
                base_url_vars=("GEMINI_BASE_URL",), key_vars=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
                key_required=True, auth="x-goog-api-key", logprobs=True, max_top_logprobs=20, supports_n=True,
                quirks=("many models answer 400 'Logprobs is not supported/enabled': re-sent without",)),
    _compat("vllm", "vLLM OpenAI-compatible server", "http://127.0.0.1:8000/v1", key_required=False,
            quirks=("U+FFFD tokens for split UTF-8 (bytes unknown)", "integer error code")),
    _compat("llamacpp", "llama.cpp server / llama-cpp-python", "http://127.0.0.1:8080/v1", key_required=False,
            n=False, min_top_logprobs=1,
            quirks=("logprobs without top_logprobs gives null: top_logprobs always sent",
                    "top_logprobs 0 drops the logprobs key: at least 1 sent",
                    "/v1/completions answers in the chat logprobs shape", "n ignored by llama-cpp-python")),
    _compat("ollama", "Ollama OpenAI-compatible API", "http://127.0.0.1:11434/v1", key_required=False, n=False,
            quirks=("older versions accept logprobs and return none (endpoint_dropped)",)),
    _compat("lmstudio", "LM Studio local server", "http://127.0.0.1:1234/v1", key_required=False, n=False),
    _compat("together", "Together AI", "https://api.together.xyz/v1", key_required=True,
            legacy_logprobs_request=True,
            quirks=("logprobs is an integer k; answers in the legacy tokens/token_logprobs shape even on chat",)),
    _compat("fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1", key_required=True, top=5,
            quirks=("top_logprobs at most 5",)),
    _compat("deepseek", "DeepSeek", "https://api.deepseek.com/v1", key_required=True, n=False,
            quirks=("reasoner models refuse logprobs", "split UTF-8 tokens come as escaped strings")),
    _compat("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", key_required=True, n=False,
            require_parameters=True,
            quirks=("provider.require_parameters sent so logprobs are not silently dropped",
                    "errors can arrive as a 200 with an error body")),
    _compat("azure", "Azure OpenAI (deployment = model; api-version from AZURE_OPENAI_API_VERSION)", None,
            key_required=True, top=5, azure=True, auth="api-key",
            base_url_vars=("AZURE_OPENAI_ENDPOINT",), key_vars=("AZURE_OPENAI_API_KEY",),
            quirks=("top_logprobs capped at 5 on some deployments", "429 code is the string '429'")),
    _compat("groq", "Groq", "https://api.groq.com/openai/v1", key_required=True, logprobs=False, n=False,
            quirks=("no logprobs (400 if sent): never sent",)),
    _compat("mistral", "Mistral La Plateforme", "https://api.mistral.ai/v1", key_required=True, logprobs=False,
            quirks=("no logprobs: never sent",)),
    _compat("openai-compatible", "any other OpenAI-compatible server (set OPENAI_COMPATIBLE_BASE_URL)", None,
            key_required=False),
    _compat("sim", "probe's simulator (probe sim serve); sim/<persona> is sent as sim-<persona>",
            "http://127.0.0.1:8765/v1", key_required=False, model_prefix="sim-"),
)}

ALIASES: dict[str, str] = {"gemini": "google", "llama-cpp": "llamacpp",
                           "azure-openai": "azure"}


def env_name(provider: str) -> str:
    """The variable prefix of a provider name: upper case, '-' → '_'."""
    return provider.upper().replace("-", "_").replace(".", "_")


def profile_for(provider: str) -> HostProfile | None:
    """The profile of a provider name or alias, or None."""
    return PROFILES.get(ALIASES.get(provider, provider))
