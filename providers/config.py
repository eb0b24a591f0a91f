"""Resolving a provider's base URL and key from the environment (no IO besides a key file).

Order: the ModelSpec's own base URL, ``<PROVIDER>_BASE_URL``, the vendor's variable, the profile's
default. Keys: ``<PROVIDER>_API_KEY``, then ``<PROVIDER>_API_KEY_FILE`` (a 0600 file), then the vendor's
variables. A missing required key or base URL raises ConfigError naming the variable to set.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from probe.completion import ConfigError
from probe.spec import ModelSpec
from providers.hosts import HostProfile, env_name

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_AZURE_API_VERSION = "2024-10-21"


class ResolvedConfig(BaseModel):
    """Where and how to call one provider; the key is a SecretStr so it never prints."""

    model_config = ConfigDict(frozen=True)

    base_url: str = Field(description="Base URL, without a trailing slash.")
    api_key: SecretStr | None = Field(default=None, description="API key, if any.")
    key_source: str | None = Field(default=None, description="Variable (or file) the key came from.")
    key_hint: str = Field(description="Which variable to check when auth fails.")
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, description="Total timeout per request.")
    api_version: str | None = Field(default=None, description="Azure api-version, if any.")
    bearer_token: SecretStr | None = Field(default=None, description="Azure AD bearer token, if given instead.")


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value.strip() if value and value.strip() else None


def read_key_file(path: str, variable: str) -> str:
    """Read a key file; refuse one that group or others can read (it must be mode 0600)."""
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except OSError as e:
        raise ConfigError(f"{variable}: cannot read key file {p}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{variable}: key file {p} is not a regular file")
    if st.st_mode & 0o077:
        raise ConfigError(
            f"{variable}: key file {p} is readable by group/others (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"run: chmod 600 {p}"
        )
    key = p.read_text(encoding="utf-8").strip()
    if not key:
        raise ConfigError(f"{variable}: key file {p} is empty")
    return key


def key_variables(provider: str, profile: HostProfile) -> tuple[str, ...]:
    """Key variables in the order they are read (file variable excluded)."""
    own = f"{env_name(provider)}_API_KEY"
    return (own, *(v for v in profile.key_vars if v != own))


def base_url_variables(provider: str, profile: HostProfile) -> tuple[str, ...]:
    own = f"{env_name(provider)}_BASE_URL"
    return (own, *(v for v in profile.base_url_vars if v != own))


def resolve_base_url(spec: ModelSpec, profile: HostProfile, env: Mapping[str, str]) -> str:
    if spec.base_url:
        return spec.base_url.rstrip("/")
    for var in base_url_variables(spec.provider, profile):
        value = _get(env, var)
        if value:
            if not value.startswith(("http://", "https://")):
                raise ConfigError(f"{var}={value!r} is not an http(s) URL")
            return value.rstrip("/")
    if profile.default_base_url is None:
        raise ConfigError(
            f"provider {spec.provider!r} has no default base URL: set {base_url_variables(spec.provider, profile)[0]}"
        )
    return profile.default_base_url


def resolve_key(spec: ModelSpec, profile: HostProfile, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(key, where it came from); raises ConfigError when a required key is missing."""
    names = key_variables(spec.provider, profile)
    value = _get(env, names[0])
    if value:
        return value, names[0]
    file_var = f"{names[0]}_FILE"
    path = _get(env, file_var)
    if path:
        return read_key_file(path, file_var), file_var
    for var in names[1:]:
        value = _get(env, var)
        if value:
            return value, var
    if profile.key_required:
        others = " or ".join(names[1:])
        raise ConfigError(
            f"no API key for provider {spec.provider!r}: set {names[0]}"
            + (f" (or {others})" if others else "") + f", or {file_var} to a chmod-600 key file"
        )
    return None, None


def resolve_config(spec: ModelSpec, profile: HostProfile, env: Mapping[str, str] | None = None) -> ResolvedConfig:
    """Everything needed to call ``spec``; raises ConfigError before any request."""
    env = os.environ if env is None else env
    base_url = resolve_base_url(spec, profile, env)
    bearer: str | None = None
    if profile.azure:
        bearer = _get(env, "AZURE_OPENAI_AD_TOKEN")
    if bearer:
        key, source = None, None
    else:
        key, source = resolve_key(spec, profile, env)
    timeout = _get(env, "PROBE_TIMEOUT_S")
    try:
        timeout_s = float(timeout) if timeout else DEFAULT_TIMEOUT_S
        if timeout_s <= 0:
            raise ValueError
    except ValueError:
        raise ConfigError(f"PROBE_TIMEOUT_S={timeout!r} is not a positive number of seconds") from None
    api_version = None
    if profile.azure:
        api_version = _get(env, "AZURE_OPENAI_API_VERSION") or _get(env, "OPENAI_API_VERSION") \
            or DEFAULT_AZURE_API_VERSION
    return ResolvedConfig(
        base_url=base_url, api_key=SecretStr(key) if key else None, key_source=source,
        key_hint=source or key_variables(spec.provider, profile)[0], timeout_s=timeout_s,
        api_version=api_version, bearer_token=SecretStr(bearer) if bearer else None,
    )
