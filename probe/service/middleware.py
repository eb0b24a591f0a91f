"""ASGI middleware: bearer-token auth and a request body limit."""

from __future__ import annotations

import hmac
import json
from http.cookies import SimpleCookie

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE = "probe_token"
PUBLIC_PATHS = frozenset({"/healthz", "/login"})


async def _send_json(send: Send, status: int, body: dict[str, object],
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


def presented_token(scope: Scope) -> str | None:
    """The token a request carries: ``Authorization: Bearer …`` or the login cookie."""
    cookie_header = None
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
        elif name == b"cookie":
            cookie_header = value.decode("latin-1")
    if cookie_header:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookie_header)
        except Exception:
            return None
        if TOKEN_COOKIE in jar:
            return str(jar[TOKEN_COOKIE].value)
    return None


def token_matches(presented: str | None, token: str) -> bool:
    return presented is not None and hmac.compare_digest(presented.encode(), token.encode())


class TokenAuth:
    """401 for every request but /healthz and /login unless it carries the token."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.token is None or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        if token_matches(presented_token(scope), self.token):
            await self.app(scope, receive, send)
            return
        await _send_json(send, 401, {"detail": "missing or wrong token: send 'Authorization: Bearer <token>' "
                                               "(or log in at /login)"},
                         [(b"www-authenticate", b'Bearer realm="probe"')])


class BodyLimit:
    """413 for a request body over ``limit`` bytes, by Content-Length or as it streams in."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_json(send, 400, {"detail": "bad Content-Length"})
                    return
                if declared > self.limit:
                    await _send_json(send, 413, {"detail": f"request body over {self.limit} bytes"})
                    return
        # no (or a small) declared length: read it all here, counting, then replay it to the app
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _send_json(send, 413, {"detail": f"request body over {self.limit} bytes"})
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
