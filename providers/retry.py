"""The one retry layer (tenacity): capped attempts and total time, full jitter, server delays honoured.

Never retried: ``quota``, ``auth``, ``bad_request``, ``refusal`` (retrying cannot help). A server-given
delay (``CallFailure.retry_after``) is waited exactly, up to ``max_server_delay_s``; a longer one fails
fast with the rate-limit failure. Time is counted from both the clock and the waits taken, so a test
that passes a zero-wait ``sleep`` still exercises the total-time budget.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from probe.completion import CallFailure, ChatRequest, Completion, ErrorKind, ProviderError
from providers.base import Provider
from providers.limits import AdaptiveLimiter

RETRYABLE: frozenset[ErrorKind] = frozenset({"rate_limit", "overloaded", "transient", "malformed"})

Sleep = Callable[[float], Awaitable[None]]
OnRetry = Callable[[int, CallFailure, float], None]


class RetryPolicy(BaseModel):
    """How hard to try one call."""

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=6, ge=1, le=100, description="Attempts in all, the first included.")
    max_total_s: float = Field(default=600.0, gt=0, description="Give up when waiting would pass this.")
    max_server_delay_s: float = Field(
        default=120.0, ge=0, description="Longest server-given delay honoured; a longer one fails fast."
    )
    base_s: float = Field(default=1.0, ge=0, description="Full-jitter base delay, seconds.")
    cap_s: float = Field(default=60.0, ge=0, description="Full-jitter cap, seconds.")

    @classmethod
    def no_wait(cls, max_attempts: int = 6) -> RetryPolicy:
        """A policy with zero waits (tests)."""
        return cls(max_attempts=max_attempts, base_s=0.0, cap_s=0.0, max_server_delay_s=3600.0)


def is_retryable(failure: CallFailure, policy: RetryPolicy) -> bool:
    """Whether another attempt can help."""
    if failure.kind not in RETRYABLE:
        return False
    return failure.retry_after is None or failure.retry_after <= policy.max_server_delay_s


def backoff_s(failure: CallFailure, attempt: int, policy: RetryPolicy, rng: random.Random) -> float:
    """Delay before attempt ``attempt + 1``: the server's, else full jitter in [0, min(cap, base·2^(n-1))]."""
    if failure.retry_after is not None:
        return failure.retry_after
    return rng.uniform(0.0, min(policy.cap_s, policy.base_s * 2.0 ** (attempt - 1)))


class _Budget:
    """Counts elapsed time as the larger of the clock and the waits taken."""

    def __init__(self, sleep: Sleep) -> None:
        self._inner = sleep
        self.start = time.monotonic()
        self.slept = 0.0

    async def sleep(self, seconds: float) -> None:
        self.slept += seconds
        await self._inner(seconds)

    def elapsed(self) -> float:
        return max(time.monotonic() - self.start, self.slept)


def _failure_of(state: RetryCallState) -> CallFailure | None:
    exc = state.outcome.exception() if state.outcome is not None else None
    return exc.failure if isinstance(exc, ProviderError) else None


async def call_with_retry(provider: Provider, req: ChatRequest, policy: RetryPolicy, *,
                          sleep: Sleep = asyncio.sleep, limiter: AdaptiveLimiter | None = None,
                          on_retry: OnRetry | None = None, rng: random.Random | None = None) -> Completion:
    """``provider.complete(req)`` with retries; raises the last ProviderError when giving up.

    With a ``limiter``, each attempt holds one of its slots and reports 429s and successes to it.
    ``on_retry(attempt, failure, delay_s)`` is called before each wait.
    """
    budget = _Budget(sleep)
    # Fast path: most calls succeed at once, and tenacity's machinery costs about 0.2 ms of CPU
    # per call here. Only a failure that may be retried enters the retry loop.
    try:
        return await _attempt(provider, req, limiter)
    except ProviderError as e:
        if policy.max_attempts <= 1 or not is_retryable(e.failure, policy):
            raise
        first = e.failure
    rand = rng or random.Random()
    delay = backoff_s(first, 1, policy, rand)
    if budget.elapsed() + delay > policy.max_total_s:
        raise ProviderError(first)
    if on_retry is not None:
        on_retry(1, first, delay)
    await budget.sleep(delay)

    def wait(state: RetryCallState) -> float:
        fail = _failure_of(state)
        return 0.0 if fail is None else backoff_s(fail, state.attempt_number + 1, policy, rand)

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number + 1 >= policy.max_attempts:  # the fast path was attempt 1
            return True
        return budget.elapsed() + state.upcoming_sleep > policy.max_total_s

    def should_retry(exc: BaseException) -> bool:
        return isinstance(exc, ProviderError) and is_retryable(exc.failure, policy)

    def before_sleep(state: RetryCallState) -> None:
        fail = _failure_of(state)
        if on_retry is not None and fail is not None:
            on_retry(state.attempt_number + 1, fail, state.upcoming_sleep)

    retrying = AsyncRetrying(sleep=budget.sleep, stop=stop, wait=wait, retry=retry_if_exception(should_retry),
                             before_sleep=before_sleep, reraise=True)
    return await retrying(_attempt, provider, req, limiter)


async def _attempt(provider: Provider, req: ChatRequest, limiter: AdaptiveLimiter | None) -> Completion:
    if limiter is None:
        return await provider.complete(req)
    async with limiter:
        try:
            result = await provider.complete(req)
        except ProviderError as e:
            if e.kind == "rate_limit":
                limiter.on_rate_limit()
            raise
    limiter.on_success(tokens=_tokens(result))
    return result


def _tokens(result: Completion) -> int:
    return (result.usage.input_tokens or 0) + (result.usage.output_tokens or 0)
