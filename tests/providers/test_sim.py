"""The adapters against probe's own simulator (issue 4) on loopback: personas, faults, Anthropic shape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from probe.completion import ChatRequest, Completion, Message, ProviderError
from probe.spec import ModelSpec
from providers import RetryPolicy, call_with_retry, create_provider
from providers.base import Provider
from providers.capabilities import CapabilityCache, CapabilityReport, probe_capabilities

sim = pytest.importorskip("probe.sim")

REQ = ChatRequest(messages=(Message(role="user", content="Which is larger? A) 2 B) 3. Answer with the letter."),),
                  max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=3)


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with sim.running_sim() as url:
        yield url


def run(provider: Provider, req: ChatRequest = REQ) -> Completion:
    async def go() -> Completion:
        try:
            return await provider.complete(req)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def test_providers_check_against_the_simulator(sim_url: str, tmp_path: Path) -> None:
    async def go(model: str) -> CapabilityReport:
        p = create_provider(ModelSpec.parse(model), env={"SIM_BASE_URL": sim_url})
        try:
            return await probe_capabilities(p, cache=CapabilityCache(tmp_path / "c.json"))
        finally:
            await p.aclose()

    good = asyncio.run(go("sim/calibrated"))
    assert good.error is None and good.logprobs and good.n_supported is True
    assert good.model_reported is not None and good.model_reported.startswith("sim-calibrated")
    none = asyncio.run(go("sim/nologprobs"))
    assert not none.logprobs and none.logprob_reason == "endpoint_dropped"


def test_logprobs_from_the_simulator_are_probabilities(sim_url: str) -> None:
    c = run(create_provider(ModelSpec.parse("sim/overconfident"), env={"SIM_BASE_URL": sim_url}))
    ch = c.first
    assert ch.logprob_state == "available" and ch.tokens
    assert all(a.logprob is not None and a.logprob <= 0 for t in ch.tokens for a in t.top)


@pytest.mark.parametrize(("fault", "kind"), [("429=1", "rate_limit"), ("quota=1", "quota"), ("529=1", "overloaded"),
                                             ("malformed=1", "malformed"), ("401=1", "auth")])
def test_simulated_faults_are_classified(fault: str, kind: str) -> None:
    with sim.running_sim(fault=fault, retry_after=0.5) as url, pytest.raises(ProviderError) as e:
        run(create_provider(ModelSpec.parse("sim/calibrated"), env={"SIM_BASE_URL": url}))
    assert e.value.kind == kind
    if kind == "rate_limit":
        assert e.value.failure.retry_after == 0.5


def test_drop_logprobs_and_retry_through_faults() -> None:
    with sim.running_sim(fault="drop_logprobs=1") as url:
        c = run(create_provider(ModelSpec.parse("sim/calibrated"), env={"SIM_BASE_URL": url}))
    assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "endpoint_dropped")
    with sim.running_sim(fault="500=0.5", fault_seed=3) as url:
        provider = create_provider(ModelSpec.parse("sim/calibrated"), env={"SIM_BASE_URL": url})

        async def many() -> list[Completion]:
            try:
                return [await call_with_retry(provider, REQ, RetryPolicy.no_wait(max_attempts=20),
                                              sleep=_no_sleep) for _ in range(10)]
            finally:
                await provider.aclose()

        assert all(c.first.logprob_state == "available" for c in asyncio.run(many()))


def test_anthropic_adapter_against_the_simulator(sim_url: str) -> None:
    provider = create_provider(ModelSpec.parse("anthropic/sim-calibrated"),
                               env={"ANTHROPIC_BASE_URL": sim_url.removesuffix("/v1"), "ANTHROPIC_API_KEY": "x"})
    c = run(provider, REQ.model_copy(update={"max_tokens": 5}))
    assert c.first.text and (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "provider_has_none")


async def _no_sleep(_: float) -> None:
    return None
