"""Concurrency and pacing per connection (provider + base URL + model).

:class:`AdaptiveLimiter` is AIMD: it halves its limit on a 429 (at most once per cooldown, so one
burst of 429s counts once) and grows back by one after a limit's worth of successes. Optional
requests-per-minute pacing spaces request starts; tokens-per-minute pacing keeps a token bucket that
successes debit with the usage they report, and new requests wait while it is in debt.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType

from providers.base import Provider

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_CONCURRENCY = 16
DEFAULT_MAX_CONCURRENCY = 64


class AdaptiveLimiter:
    """``async with limiter:`` holds one slot; ``on_rate_limit()`` / ``on_success()`` adapt the limit."""

    def __init__(self, initial: int = DEFAULT_CONCURRENCY, *, min_limit: int = 1, max_limit: int | None = None,
                 rpm: float | None = None, tpm: float | None = None, cooldown_s: float = 1.0,
                 clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep) -> None:
        if initial < 1 or min_limit < 1:
            raise ValueError("concurrency limits must be at least 1")
        self.max_limit = max(initial, max_limit or initial)
        self.min_limit = min(min_limit, initial)
        self._limit = initial
        self._in_flight = 0
        self._credit = 0.0
        self._cooldown_s = cooldown_s
        self._last_decrease = -float("inf")
        self._clock = clock
        self._sleep = sleep
        self._interval = 60.0 / rpm if rpm else 0.0
        self._next_start = 0.0
        self._tpm = tpm
        self._bucket = tpm or 0.0
        self._bucket_at = clock()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.rate_limits = 0

    @property
    def limit(self) -> int:
        """Current concurrency limit."""
        return self._limit

    @property
    def in_flight(self) -> int:
        """Slots held now."""
        return self._in_flight

    async def acquire(self) -> None:
        """Wait for a slot (FIFO), then for the pacing, if any."""
        if self._in_flight < self._limit and not self._waiters:
            self._in_flight += 1
        else:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():  # granted, then cancelled: give the slot back
                    self._release()
                else:
                    self._waiters.remove(fut)
                raise
        try:
            await self._pace()
        except BaseException:
            self._release()
            raise

    async def _pace(self) -> None:
        if self._interval:
            now = self._clock()
            start = max(now, self._next_start)
            self._next_start = start + self._interval
            if start > now:
                await self._sleep(start - now)
        if self._tpm:
            deficit = -self._refill()
            if deficit > 0:
                await self._sleep(deficit * 60.0 / self._tpm)

    def _refill(self) -> float:
        assert self._tpm is not None
        now = self._clock()
        self._bucket = min(self._tpm, self._bucket + (now - self._bucket_at) * self._tpm / 60.0)
        self._bucket_at = now
        return self._bucket

    def _release(self) -> None:
        self._in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._in_flight < self._limit:
            fut = self._waiters.popleft()
            if not fut.done():
                self._in_flight += 1
                fut.set_result(None)

    async def __aenter__(self) -> AdaptiveLimiter:
        await self.acquire()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._release()

    def on_rate_limit(self) -> None:
        """Multiplicative decrease (halve), once per cooldown."""
        self.rate_limits += 1
        now = self._clock()
        if now - self._last_decrease < self._cooldown_s:
            return
        self._last_decrease = now
        self._limit = max(self.min_limit, self._limit // 2)
        self._credit = 0.0

    def on_success(self, tokens: int = 0) -> None:
        """Additive increase (+1 per limit's worth of successes); debit ``tokens`` from the tpm bucket."""
        if self._tpm and tokens:
            self._refill()
            self._bucket -= tokens
        if self._limit >= self.max_limit:
            return
        self._credit += 1.0 / self._limit
        if self._credit >= 1.0:
            self._credit = 0.0
            self._limit += 1
            self._wake()


class LimiterPool:
    """One AdaptiveLimiter per connection key, sized from the ModelSpec (concurrency, rpm, tpm)."""

    def __init__(self, *, default_concurrency: int = DEFAULT_CONCURRENCY,
                 max_concurrency: int = DEFAULT_MAX_CONCURRENCY) -> None:
        self._limiters: dict[str, AdaptiveLimiter] = {}
        self._default = default_concurrency
        self._max = max_concurrency

    def for_provider(self, provider: Provider) -> AdaptiveLimiter:
        key = provider.connection_key
        if key not in self._limiters:
            spec = provider.spec
            initial = spec.concurrency or self._default
            self._limiters[key] = AdaptiveLimiter(initial, max_limit=spec.concurrency or max(initial, self._max),
                                                  rpm=spec.rpm, tpm=spec.tpm)
        return self._limiters[key]
