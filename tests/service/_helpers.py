"""Test helpers: a hand-moved clock, a webhook receiver and a model-swapping proxy (real loopback HTTP)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeClock:
    """An injectable clock the test moves by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class WebhookReceiver:
    """Collects JSON POSTs; answers 500 to the first ``fail_first`` of them."""

    def __init__(self, fail_first: int = 0, status: int = 200) -> None:
        self.fail_first = fail_first
        self.status = status
        self.attempts = 0
        self.bodies: list[Any] = []
        self.lock = threading.Lock()

    @contextmanager
    def serve(self) -> Iterator[str]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.attempts += 1
                    failing = receiver.attempts <= receiver.fail_first
                    if not failing:
                        receiver.bodies.append(json.loads(body))
                self.send_response(500 if failing else receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        with _serving(Handler) as url:
            yield url + "/hook"


class ModelSwapProxy:
    """Forwards chat completions to a simulator; while ``swap`` is set, asks for another persona instead
    (a vendor silently replacing the model behind a name)."""

    def __init__(self, upstream: str, swap_from: str, swap_to: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.swap_from = swap_from
        self.swap_to = swap_to
        self.swap = False

    @contextmanager
    def serve(self) -> Iterator[str]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                if proxy.swap and body.get("model") == proxy.swap_from:
                    body["model"] = proxy.swap_to
                path = self.path.removeprefix("/v1")
                req = urllib.request.Request(proxy.upstream + path, data=json.dumps(body).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as resp:
                        status, data = resp.status, resp.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        with _serving(Handler) as url:
            yield url + "/v1"


@contextmanager
def serving(app: Any, startup_timeout: float = 30.0) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a free loopback port in a background thread; yields its base URL."""
    import time

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
