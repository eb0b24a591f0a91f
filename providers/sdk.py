"""Shared glue for the adapters that go through an official SDK (retries off, errors classified here)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import httpx2

from probe.completion import CallFailure
from providers.errors import Redact, classify_http_error, failure, parse_body


def sdk_status_response(exc: BaseException) -> httpx2.Response | None:
    """The HTTP response behind an SDK status error (openai/anthropic APIStatusError), if any."""
    response = getattr(exc, "response", None)
    return response if isinstance(response, httpx2.Response) else None


def failure_from_sdk_exception(exc: BaseException, *, redact: Redact, hint: str, timeout_s: float) -> CallFailure | None:
    """Classify an SDK exception; None when it is not an API/transport error (a bug: let it raise)."""
    response = sdk_status_response(exc)
    if response is not None:
        return classify_http_error(response.status_code, response.headers, response.content, redact=redact,
                                   hint=hint)
    name = type(exc).__name__
    if "Timeout" in name:
        return failure("transient", f"request timed out after {timeout_s:g}s", redact=redact)
    if "Connection" in name:
        cause = exc.__cause__ or exc.__context__
        return failure("transient", f"{name}: {cause or exc}", redact=redact)
    if "ResponseValidation" in name:
        return failure("malformed", f"{name}: {exc}", redact=redact)
    return None


def sdk_error_payload(exc: BaseException) -> tuple[int, Any]:
    """(status, parsed JSON body) of an SDK status error, or (0, None)."""
    response = sdk_status_response(exc)
    if response is None:
        return 0, None
    return response.status_code, parse_body(response.content)


C = TypeVar("C")


class PerLoop(Generic[C]):
    """One SDK client per event loop: its pooled connections belong to the loop that opened them."""

    def __init__(self, factory: Callable[[], C], close: Callable[[C], Awaitable[None]]) -> None:
        self._factory = factory
        self._close = close
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> C:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = self._factory(), loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._close(self._client)
        self._client = self._loop = None
