"""Provider names → adapters. A vendor SDK is imported only when that vendor is used."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from probe.completion import ConfigError
from probe.spec import ModelSpec
from providers.base import Provider
from providers.config import base_url_variables, key_variables, resolve_config
from providers.hosts import ALIASES, PROFILES, HostProfile, profile_for
from providers.redact import Redactor, url_secrets


class ProviderInfo(BaseModel):
    """What ``probe providers list`` shows for one provider name."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Provider name.")
    aliases: tuple[str, ...] = Field(description="Other names accepted for it.")
    family: str = Field(description="Wire format.")
    description: str = Field(description="What it is.")
    default_base_url: str | None = Field(description="Default base URL (None: must be set).")
    base_url_variables: tuple[str, ...] = Field(description="Variables read for the base URL, in order.")
    key_variables: tuple[str, ...] = Field(description="Variables read for the key, in order.")
    key_required: bool = Field(description="Whether a key is required.")
    logprobs: bool = Field(description="Whether the API can return logprobs at all.")
    max_top_logprobs: int = Field(description="Largest top_logprobs accepted.")
    supports_n: bool = Field(description="Whether one call returns n > 1 choices.")
    quirks: tuple[str, ...] = Field(description="Known quirks handled by the adapter.")


def known_providers() -> list[ProviderInfo]:
    """Every provider name with its variables, defaults and static capabilities."""
    out = []
    for p in PROFILES.values():
        out.append(ProviderInfo(
            name=p.name, aliases=tuple(a for a, target in ALIASES.items() if target == p.name), family=p.family,
            description=p.description, default_base_url=p.default_base_url,
            base_url_variables=base_url_variables(p.name, p), key_variables=key_variables(p.name, p),
            key_required=p.key_required, logprobs=p.logprobs, max_top_logprobs=p.max_top_logprobs,
            supports_n=p.supports_n, quirks=p.quirks,
        ))
    return out


def _profile(spec: ModelSpec) -> HostProfile:
    profile = profile_for(spec.provider)
    if profile is None:
        names = ", ".join(sorted([*PROFILES, *ALIASES]))
        raise ConfigError(
            f"unknown provider {spec.provider!r} in {spec.name!r}: known providers are {names}; for another "
            "OpenAI-compatible server use openai-compatible/<model> with OPENAI_COMPATIBLE_BASE_URL"
        )
    return profile


def create_provider(spec: ModelSpec, env: Mapping[str, str] | None = None) -> Provider:
    """The adapter for ``spec``; ConfigError (naming the variable to set) before any request."""
    profile = _profile(spec)
    cfg = resolve_config(spec, profile, os.environ if env is None else env)
    redactor = Redactor([*(s.get_secret_value() for s in (cfg.api_key, cfg.bearer_token) if s is not None),
                         *url_secrets(cfg.base_url)])
    if profile.family == "openai-chat":
        from providers.openai_compat import OpenAIChatProvider

        return OpenAIChatProvider(spec, profile, cfg, redactor)
    if profile.family == "google":
        from providers.google_gemini import GeminiProvider

        return GeminiProvider(spec, profile, cfg, redactor)
    if profile.family == "anthropic":
        from providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(spec, profile, cfg, redactor)
    from providers.openai_responses import OpenAIResponsesProvider

    return OpenAIResponsesProvider(spec, profile, cfg, redactor)
