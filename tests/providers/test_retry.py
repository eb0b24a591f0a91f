"""The retry layer with zero wall time: a scripted provider and a recording sleep."""

from __future__ import annotations

import asyncio
import random
from collections import deque

import pytest

from probe.completion import CallFailure, ChatRequest, Completion, ErrorKind, Message, ProviderError
from probe.spec import ModelSpec
from providers import create_provider
from providers.base import Provider
from providers.hosts import PROFILES
from providers.limits import AdaptiveLimiter
from providers.normalize import unavailable_choice
from providers.redact import Redactor
from providers.retry import RetryPolicy, backoff_s, call_with_retry
from tests.providers import payloads as P
from tests.providers.loopback import LoopbackServer, Reply

REQ = ChatRequest(messages=(Message(role="user", content="hi"),))
OK = Completion(choices=(unavailable_choice(index=0, text="ok", finish_reason="stop", reason="not_requested"),))


class Scripted(Provider):
    """Raises the scripted failures in order, then succeeds (no IO: the retry layer is what is tested)."""

    def __init__(self, *outcomes: CallFailure | Completion) -> None:
        super().__init__(ModelSpec.parse("sim/x"), PROFILES["sim"], "http://127.0.0.1:1/v1", Redactor())
        self.outcomes = deque(outcomes)
        self.calls = 0

    async def _complete_once(self, req: ChatRequest) -> Completion:
        self.calls += 1
        out = self.outcomes.popleft() if self.outcomes else OK
        if isinstance(out, CallFailure):
            raise ProviderError(out)
        return out

    async def aclose(self) -> None:
        return None


def fail(kind: ErrorKind, after: float | None = None) -> CallFailure:
    return CallFailure(kind=kind, message=f"{kind}!", retry_after=after)


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def retry(provider: Provider, policy: RetryPolicy, sleeps: Sleeps, **kw: object) -> Completion:
    return asyncio.run(call_with_retry(provider, REQ, policy, sleep=sleeps, **kw))  # type: ignore[arg-type]


def test_transient_failures_are_retried_until_success() -> None:
    p, s = Scripted(fail("transient"), fail("overloaded"), fail("malformed")), Sleeps()
    assert retry(p, RetryPolicy.no_wait(), s) == OK
    assert p.calls == 4 and s.waits == [0.0, 0.0, 0.0]


def test_server_delay_is_honoured_exactly() -> None:
    p, s = Scripted(fail("rate_limit", 20.0), fail("rate_limit", 0.125)), Sleeps()
    retry(p, RetryPolicy(base_s=1.0, cap_s=8.0), s)
    assert s.waits == [20.0, 0.125]


def test_server_delay_over_the_cap_fails_fast() -> None:
    p, s = Scripted(fail("rate_limit", 86400.0)), Sleeps()
    with pytest.raises(ProviderError) as e:
        retry(p, RetryPolicy(max_server_delay_s=120.0), s)
    assert e.value.kind == "rate_limit" and p.calls == 1 and s.waits == []


@pytest.mark.parametrize("kind", ["quota", "auth", "bad_request", "refusal"])
def test_never_retried(kind: ErrorKind) -> None:
    p, s = Scripted(fail(kind)), Sleeps()
    with pytest.raises(ProviderError) as e:
        retry(p, RetryPolicy.no_wait(), s)
    assert e.value.kind == kind and p.calls == 1 and s.waits == []


def test_attempts_are_capped_and_the_last_failure_raised() -> None:
    p, s = Scripted(*[fail("transient")] * 10), Sleeps()
    with pytest.raises(ProviderError):
        retry(p, RetryPolicy.no_wait(max_attempts=3), s)
    assert p.calls == 3 and len(s.waits) == 2


def test_total_time_budget_counts_the_waits() -> None:
    p, s = Scripted(*[fail("rate_limit", 40.0)] * 10), Sleeps()
    with pytest.raises(ProviderError):
        retry(p, RetryPolicy(max_attempts=10, max_total_s=100.0), s)
    assert s.waits == [40.0, 40.0] and p.calls == 3  # a third 40 s wait would pass 100 s


def test_full_jitter_bounds() -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=8.0)
    rng = random.Random(0)
    for attempt in range(1, 8):
        for _ in range(50):
            assert 0.0 <= backoff_s(fail("transient"), attempt, policy, rng) <= min(8.0, 2.0 ** (attempt - 1))
    p, s = Scripted(*[fail("transient")] * 5), Sleeps()
    retry(p, policy, s, rng=random.Random(1))
    assert len(s.waits) == 5 and len(set(s.waits)) == 5 and all(0 <= w <= 8 for w in s.waits)


def test_on_retry_sees_each_failure() -> None:
    seen: list[tuple[int, str, float]] = []
    p, s = Scripted(fail("transient"), fail("rate_limit", 3.0)), Sleeps()
    retry(p, RetryPolicy.no_wait(), s, on_retry=lambda n, f, d: seen.append((n, f.kind, d)))
    assert seen == [(1, "transient", 0.0), (2, "rate_limit", 3.0)]


def test_limiter_hears_rate_limits_and_successes() -> None:
    limiter = AdaptiveLimiter(8, max_limit=16, cooldown_s=0.0)
    p, s = Scripted(fail("rate_limit", 0.0), fail("rate_limit", 0.0)), Sleeps()
    retry(p, RetryPolicy.no_wait(), s, limiter=limiter)
    assert limiter.rate_limits == 2 and limiter.limit == 2 and limiter.in_flight == 0


def test_retry_over_real_http(server: LoopbackServer) -> None:
    server.queue(Reply(status=429, body=P.OPENAI_429, headers={"retry-after": "1.5"}),
                 Reply(status=503, body=P.GEMINI_503), Reply(body=P.OPENAI_EQUIVALENT))
    provider = create_provider(ModelSpec.parse("vllm/m"), env={"VLLM_BASE_URL": server.url + "/v1"})
    s = Sleeps()

    async def go() -> Completion:
        try:
            return await call_with_retry(provider, REQ, RetryPolicy(base_s=2.0, cap_s=4.0), sleep=s,
                                         rng=random.Random(3))
        finally:
            await provider.aclose()

    c = asyncio.run(go())
    assert c.first.text == "Hello!" and len(server.received) == 3
    assert s.waits[0] == 1.5 and 0.0 <= s.waits[1] <= 4.0
