"""A real HTTP server on 127.0.0.1 (aiohttp.web in a background thread) that serves canned replies.

Tests queue replies (status, headers, body, delay) or install a handler, and read back every request
the client sent (path, query, headers, JSON body).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    """One canned HTTP answer; a dict/list body is sent as JSON."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str = "application/json"


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


Handler = Callable[[Received], Reply]


class LoopbackServer:
    """Start with ``start()``; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.handler: Handler | None = None
        self.received: list[Received] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        got = Received(request.method, request.path, dict(request.query), dict(request.headers),
                       await request.read())
        self.received.append(got)
        if self.replies:
            reply = self.replies.popleft()
        elif self.handler is not None:
            reply = self.handler(got)
        else:
            reply = Reply(status=599, body={"error": {"message": "loopback: no reply queued"}})
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        body = reply.body
        if isinstance(body, dict | list):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        return web.Response(status=reply.status, body=body, headers=reply.headers,
                            content_type=reply.content_type)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> LoopbackServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
