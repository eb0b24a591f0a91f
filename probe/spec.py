"""ModelSpec: which model at which provider, parsed from ``provider/model``."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

_PROVIDER_RE = re.compile(r"^[a-z][a-z0-9-]*$")


class ModelSpecError(ValueError):
    """A model string that is not ``provider/model``."""


class ModelSpec(BaseModel):
    """A model addressed as ``provider/model``; the model part may itself contain slashes."""

    model_config = ConfigDict(frozen=True)

    provider: str = Field(description="Provider name, lower case, e.g. 'openai', 'vllm', 'sim'.")
    model: str = Field(description="Model name as the provider's API expects it, e.g. 'Qwen/Qwen3-8B'.")
    base_url: str | None = Field(default=None, description="Override of the provider's base URL.")
    concurrency: int | None = Field(default=None, ge=1, le=1024, description="Max requests in flight.")
    rpm: float | None = Field(default=None, gt=0, description="Requests-per-minute pacing, if any.")
    tpm: float | None = Field(default=None, gt=0, description="Tokens-per-minute pacing, if any.")
    batch: bool = Field(default=False, description="Send through the vendor's batch engine.")

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        """Parse ``provider/model`` (e.g. ``vllm/Qwen/Qwen3-8B``)."""
        raw = text.strip()
        provider, sep, model = raw.partition("/")
        if not sep or not provider:
            raise ModelSpecError(
                f"model {text!r} has no provider: write it as provider/model, e.g. openai/gpt-4.1-mini"
            )
        if not model:
            raise ModelSpecError(f"model {text!r} has an empty model name after {provider + '/'!r}")
        if model.strip() != model:
            raise ModelSpecError(f"model {text!r}: the model name starts or ends with white space")
        provider = provider.lower()
        if not _PROVIDER_RE.match(provider):
            raise ModelSpecError(f"model {text!r}: provider {provider!r} is not a valid provider name")
        return cls(provider=provider, model=model)

    @property
    def name(self) -> str:
        """The canonical ``provider/model`` string."""
        return f"{self.provider}/{self.model}"

    def __str__(self) -> str:
        return self.name
