"""The lean async HTTP client of the hot path: one aiohttp ClientSession per provider instance.

It sends JSON bytes and hands back (status, headers, body bytes, latency); decoding and
classification are the converters' job. Transport failures become ProviderError(transient).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import aiohttp

from probe.completion import ProviderError
from providers import jsonio
from providers.errors import failure
from providers.redact import Redactor


class HttpResult(NamedTuple):
    """A raw HTTP answer."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    latency_s: float


class JsonHttpClient:
    """POSTs JSON over one shared aiohttp session (created lazily inside the running loop)."""

    def __init__(self, *, headers: Mapping[str, str], timeout_s: float, redact: Redactor,
                 params: Mapping[str, str] | None = None, max_connections: int = 0) -> None:
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        self._params = dict(params or {})
        self._timeout_s = timeout_s
        self._redact = redact
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:  # never shows headers (they hold the key)
        return f"JsonHttpClient(timeout_s={self._timeout_s})"

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is not loop:
            # a session belongs to the loop that made it (e.g. a capability check run in an earlier
            # asyncio.run): start a fresh one; the old loop's connections went with it
            self._session = None
        if self._session is None or self._session.closed:
            self._loop = loop
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout_s),
                connector=aiohttp.TCPConnector(limit=self._max_connections, ttl_dns_cache=300),
                trust_env=False,
                raise_for_status=False,
            )
        return self._session

    async def post_json(self, url: str, payload: Any) -> HttpResult:
        """POST ``payload`` as JSON; ProviderError(transient) on timeouts and connection failures."""
        data = jsonio.dumps(payload)
        session = self._open()
        start = time.perf_counter()
        try:
            async with session.post(url, data=data, params=self._params or None) as resp:
                body = await resp.read()
                return HttpResult(resp.status, resp.headers, body, time.perf_counter() - start)
        except TimeoutError:
            raise ProviderError(failure("transient", f"request timed out after {self._timeout_s:g}s",
                                        redact=self._redact)) from None
        except aiohttp.ClientError as e:
            raise ProviderError(failure("transient", f"{type(e).__name__}: {e}", redact=self._redact)) from None

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None

