"""RunSpec: what to run (CLI flags, run.toml and the service's POST /v1/runs share it)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probe.errors import UsageError
from probe.hashing import versioned_hash
from probe.record import SOURCES, Source
from probe.spec import ModelSpec


class ModelConfig(BaseModel):
    """One model to run, with optional per-model connection settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="provider/model, e.g. openai/gpt-4.1-mini or sim/calibrated.")
    base_url: str | None = Field(default=None, description="Override of the provider's base URL.")
    concurrency: int | None = Field(default=None, ge=1, le=1024, description="Max requests in flight.")
    rpm: float | None = Field(default=None, gt=0, description="Requests per minute, if paced.")
    tpm: float | None = Field(default=None, gt=0, description="Tokens per minute, if paced.")
    batch: bool = Field(default=False, description="Use the vendor's batch engine.")

    @field_validator("model")
    @classmethod
    def _parse(cls, value: str) -> str:
        return ModelSpec.parse(value).name

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        # the base URL is stored with the run and shown in reports: it must not carry a secret
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"{value!r} is not an http(s) URL")
            if parts.username or parts.password or parts.query:
                raise ValueError("a base URL must not carry credentials or a query string; put the key in "
                                 "<PROVIDER>_API_KEY (or a 0600 key file)")
        return value

    def spec(self) -> ModelSpec:
        base = ModelSpec.parse(self.model)
        return base.model_copy(update={"base_url": self.base_url, "concurrency": self.concurrency,
                                       "rpm": self.rpm, "tpm": self.tpm, "batch": self.batch})


class RunSpec(BaseModel):
    """A run: suites × models × sources × variants."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suites: list[str] = Field(min_length=1, description="Suite names or directories.")
    models: list[ModelConfig] = Field(min_length=1, description="Models to ask.")
    sources: list[Source] = Field(default=list(SOURCES), min_length=1, description="Confidence sources.")
    variants: list[str] | None = Field(default=None, description="Prompt variant ids; None = all.")
    limit: int | None = Field(default=None, ge=1, description="Questions per suite (the first N).")
    samples: int = Field(default=5, ge=2, le=50, description="Samples per item for consistency.")
    temperature: float = Field(default=1.0, ge=0, le=2, description="Sampling temperature for consistency.")
    top_logprobs: int = Field(default=20, ge=1, le=20, description="Alternatives asked for per position.")
    concurrency: int = Field(default=32, ge=1, le=1024, description="Default max requests in flight per model.")
    refresh: bool = Field(default=False, description="Bypass the response cache (still fills it).")

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"model": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        return value

    def fingerprint(self) -> str:
        """Identity of the plan (refresh does not change what is measured)."""
        return versioned_hash(self.model_dump(mode="json", exclude={"refresh", "concurrency"}), tag="r1")


def load_run_config(path: Path) -> RunSpec:
    """Read a run.toml; errors name the file and field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: {e}") from None
    return validate_spec(data, str(path))


def validate_spec(data: dict[str, Any], where: str) -> RunSpec:
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"])
            if where == "command line":  # name the flag the user typed, not the field
                loc = _FLAGS.get(str(err["loc"][0]), loc) if err["loc"] else loc
            lines.append(f"{where}: {loc}: {str(err['msg']).removeprefix('Value error, ')}")
        raise UsageError("\n".join(lines)) from None


_FLAGS = {"suites": "--suite", "models": "--model", "sources": "--source", "variants": "--variant",
          "limit": "--limit", "samples": "--samples", "temperature": "--temperature",
          "concurrency": "--concurrency"}
