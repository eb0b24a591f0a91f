"""The narrow interface every adapter implements: one attempt per ``complete`` call."""

from __future__ import annotations

import abc
import asyncio

from pydantic import BaseModel, ConfigDict, Field

from probe.completion import ChatRequest, Completion, Usage
from probe.spec import ModelSpec
from providers.hosts import HostProfile
from providers.redact import Redactor, public_url


class Capabilities(BaseModel):
    """Static capabilities from the host profile (what the API can do at all)."""

    model_config = ConfigDict(frozen=True)

    logprobs: bool = Field(description="Whether the API can return token logprobs at all.")
    max_top_logprobs: int = Field(ge=0, description="Largest top_logprobs the host accepts.")
    supports_n: bool = Field(description="Whether one call can return n > 1 choices.")


class Provider(abc.ABC):
    """One provider + base URL + model. ``complete`` makes ONE attempt and raises ProviderError on failure.

    Inside that attempt, a model that refuses logprobs is asked once more without them (choices then
    carry ``unavailable: model_refused``), and sampling parameters the model rejects are dropped and
    listed in ``Completion.dropped_params``; both are remembered for later calls.
    """

    spec: ModelSpec
    name: str
    profile: HostProfile
    base_url: str
    connection_key: str
    capabilities: Capabilities
    redact: Redactor

    def __init__(self, spec: ModelSpec, profile: HostProfile, base_url: str, redactor: Redactor) -> None:
        self.spec = spec
        self.name = spec.provider
        self.profile = profile
        self.base_url = base_url
        self.connection_key = f"{spec.provider}|{public_url(base_url)}|{spec.model}"
        self.capabilities = Capabilities(logprobs=profile.logprobs, max_top_logprobs=profile.max_top_logprobs,
                                         supports_n=profile.supports_n)
        self.redact = redactor
        self.logprobs_refused = False
        self.dropped: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.name!r}, base_url={public_url(self.base_url)!r})"

    @property
    def wire_model(self) -> str:
        """The model name as sent on the wire."""
        return self.profile.model_prefix + self.spec.model if self.profile.model_prefix and not \
            self.spec.model.startswith(self.profile.model_prefix) else self.spec.model

    async def complete(self, req: ChatRequest) -> Completion:
        """One attempt. n > 1 on an API without ``n`` is sent as n single calls (seeds offset by i)."""
        if req.n > 1 and not self.capabilities.supports_n:
            return await self._fan_out(req)
        return await self._complete_once(req)

    @abc.abstractmethod
    async def _complete_once(self, req: ChatRequest) -> Completion:
        """One call for ``req`` (with ``req.n`` honoured by the API when it supports it)."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release connections."""

    async def _fan_out(self, req: ChatRequest) -> Completion:
        singles = [req.model_copy(update={"n": 1, "seed": None if req.seed is None else req.seed + i})
                   for i in range(req.n)]
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._complete_once(r)) for r in singles]
        except BaseExceptionGroup as eg:  # the first failure stands for the call; the rest were cancelled
            raise eg.exceptions[0] from None
        return merge_completions([t.result() for t in tasks])


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def merge_completions(parts: list[Completion]) -> Completion:
    """One Completion from single-choice calls: choices re-indexed, usage summed, latency the longest."""
    choices = tuple(c.model_copy(update={"index": i}) for i, c in enumerate(ch for p in parts for ch in p.choices))
    usage = Usage(input_tokens=_sum([p.usage.input_tokens for p in parts]),
                  output_tokens=_sum([p.usage.output_tokens for p in parts]))
    dropped = tuple(dict.fromkeys(d for p in parts for d in p.dropped_params))
    return Completion(choices=choices, model_reported=parts[0].model_reported, usage=usage,
                      latency_s=max(p.latency_s for p in parts), dropped_params=dropped,
                      top_k_requested=parts[0].top_k_requested)
