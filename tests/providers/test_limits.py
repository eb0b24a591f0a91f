"""AIMD concurrency and rpm/tpm pacing, on a fake clock (no wall time)."""

from __future__ import annotations

import asyncio

import pytest

from probe.spec import ModelSpec
from providers import create_provider
from providers.limits import AdaptiveLimiter, LimiterPool


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_multiplicative_decrease_once_per_cooldown_then_additive_increase() -> None:
    t = FakeTime()
    lim = AdaptiveLimiter(16, max_limit=32, cooldown_s=1.0, clock=t.clock)
    lim.on_rate_limit()
    lim.on_rate_limit()  # same burst: counted, not halved again
    assert lim.limit == 8 and lim.rate_limits == 2
    t.now = 2.0
    lim.on_rate_limit()
    assert lim.limit == 4
    for _ in range(4):
        lim.on_success()
    assert lim.limit == 5  # +1 after a limit's worth of successes
    for _ in range(1000):
        lim.on_success()
    assert lim.limit == 32
    for _ in range(10):
        t.now += 2.0
        lim.on_rate_limit()
    assert lim.limit == 1


def test_concurrency_never_exceeds_the_limit_and_shrinks() -> None:
    async def go() -> tuple[int, int]:
        lim = AdaptiveLimiter(4, cooldown_s=0.0)
        peak = 0

        async def job(i: int) -> None:
            nonlocal peak
            async with lim:
                peak = max(peak, lim.in_flight)
                await asyncio.sleep(0)
                if i == 0:
                    lim.on_rate_limit()
                else:
                    lim.on_success()

        await asyncio.gather(*(job(i) for i in range(40)))
        return peak, lim.in_flight

    peak, left = asyncio.run(go())
    assert peak <= 4 and left == 0


def test_cancelled_waiter_does_not_leak_a_slot() -> None:
    async def go() -> list[int]:
        lim = AdaptiveLimiter(1)
        seen = []
        await lim.acquire()
        waiting = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled while queued
        with pytest.raises(asyncio.CancelledError):
            await waiting
        granted = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0)
        await lim.__aexit__(None, None, None)  # hands the slot to `granted`...
        granted.cancel()  # ...which is cancelled before it runs: the slot must come back
        with pytest.raises(asyncio.CancelledError):
            await granted
        seen.append(lim.in_flight)
        async with lim:  # would wait forever if a slot had leaked
            seen.append(lim.in_flight)
        seen.append(lim.in_flight)
        return seen

    assert asyncio.run(asyncio.wait_for(go(), 5)) == [0, 1, 0]


def test_rpm_pacing_spaces_request_starts() -> None:
    t = FakeTime()

    async def go() -> None:
        lim = AdaptiveLimiter(10, rpm=120, clock=t.clock, sleep=t.sleep)
        for _ in range(5):
            async with lim:
                lim.on_success()

    asyncio.run(go())
    assert t.waits == [0.5, 0.5, 0.5, 0.5]


def test_tpm_pacing_waits_for_the_bucket_to_refill() -> None:
    t = FakeTime()

    async def go() -> None:
        lim = AdaptiveLimiter(10, tpm=600, clock=t.clock, sleep=t.sleep)
        async with lim:
            lim.on_success(tokens=900)  # 300 tokens in debt
        async with lim:
            lim.on_success(tokens=10)

    asyncio.run(go())
    assert t.waits == [pytest.approx(30.0)]  # 300 tokens at 10 tokens/s


def test_pool_keys_by_connection_and_uses_the_spec() -> None:
    pool = LimiterPool()
    a = create_provider(ModelSpec(provider="vllm", model="m", concurrency=3, rpm=60),
                        env={"VLLM_BASE_URL": "http://127.0.0.1:9/v1"})
    b = create_provider(ModelSpec.parse("vllm/m"), env={"VLLM_BASE_URL": "http://127.0.0.1:9/v1"})
    c = create_provider(ModelSpec.parse("vllm/other"), env={"VLLM_BASE_URL": "http://127.0.0.1:9/v1"})
    la = pool.for_provider(a)
    assert la is pool.for_provider(b) and la is not pool.for_provider(c)
    assert la.limit == 3 and la.max_limit == 3
