"""A stateful stand-in for both vendors' HTTP APIs: live chat (OpenAI Chat Completions, Anthropic Messages)
and the batch life cycles (OpenAI files + batches, Anthropic Message Batches), answering with tests.batch.canned.

One ``FakeVendor`` is mounted either in respx (``respx_handler``: the SDKs' httpx requests) or on a real
127.0.0.1 port (``LoopbackVendor``: aiohttp in a thread, for probe's aiohttp chat client and for child
processes). Batches move ``validating → in_progress → completed`` (OpenAI) / ``in_progress → ended``
(Anthropic) one step per poll (``hold`` keeps them in progress); results come back shuffled, with the
lines ``fail(custom_id)`` picks errored, expired or canceled, as the vendors' documented shapes have them.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from email import policy
from email.parser import BytesParser
from typing import Any

import httpx2
from aiohttp import web

from tests.batch.canned import anthropic_message, openai_chat

Fail = Callable[[str], str | None]

OPENAI_SERVER_ERROR = {"error": {"message": "The server had an error while processing your request.",
                                 "type": "server_error", "param": None, "code": None}}
OPENAI_LOGPROB_REFUSAL = {"error": {"message": "This model does not support the 'logprobs' parameter.",
                                    "type": "invalid_request_error", "param": "logprobs",
                                    "code": "unsupported_parameter"}}
ANTHROPIC_API_ERROR = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"},
                       "request_id": "req_011CanNed"}
ANTHROPIC_TEMPERATURE = {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "`temperature` is deprecated for this model."},
                         "request_id": "req_011CanNed2"}


def every_nth(errored: int = 0, expired: int = 0, canceled: int = 0) -> Fail:
    """Pick lines to fail by their custom_id (a hex hash): stable, spread over the plan."""

    def fail(custom_id: str) -> str | None:
        h = int(custom_id[:8], 16) if all(c in "0123456789abcdef" for c in custom_id[:8]) else hash(custom_id)
        if errored and h % errored == 0:
            return "errored"
        if expired and h % expired == 1:
            return "expired"
        if canceled and h % canceled == 2:
            return "canceled"
        return None

    return fail


def parse_multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    msg = BytesParser(policy=policy.HTTP).parsebytes(
        b"MIME-Version: 1.0\r\nContent-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    out: dict[str, bytes] = {}
    for part in msg.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        out[str(name)] = part.get_payload(decode=True)
    return out


class FakeVendor:
    def __init__(self, *, fail: Fail | None = None, polls_until_done: int = 2, seed: int = 7,
                 refuse_logprobs: frozenset[str] = frozenset(), reject_temperature: frozenset[str] = frozenset()) -> None:
        self.fail = fail or (lambda _cid: None)
        self.polls_until_done = polls_until_done
        self.hold = False
        self.rng = random.Random(seed)
        self.refuse_logprobs = refuse_logprobs
        self.reject_temperature = reject_temperature
        self.files: dict[str, bytes] = {}
        self.openai_batches: dict[str, dict[str, Any]] = {}
        self.anthropic_batches: dict[str, dict[str, Any]] = {}
        self.anthropic_inputs: dict[str, list[dict[str, Any]]] = {}
        self.anthropic_results: dict[str, bytes] = {}
        self.create_sizes: list[int] = []  # bytes of each Message Batches create body, as received
        self.calls: Counter[str] = Counter()
        self.base_url = ""
        self._n = 0
        self._lock = threading.Lock()

    # -- plumbing -----------------------------------------------------------------------------------
    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n:06d}"

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            status, payload = self._route(method, path, headers, body)
        if isinstance(payload, bytes):
            return status, {"content-type": "application/octet-stream"}, payload
        return status, {"content-type": "application/json"}, json.dumps(payload).encode()

    def respx_handler(self, request: httpx2.Request) -> httpx2.Response:
        status, headers, body = self.handle(request.method, request.url.path, request.headers, request.content)
        return httpx2.Response(status, headers=headers, content=body)

    def _route(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        key = f"{method} {path}"
        if method == "POST" and path == "/v1/chat/completions":
            self.calls["live:openai"] += 1
            return self._openai_live(json.loads(body))
        if method == "POST" and path == "/v1/messages":
            self.calls["live:anthropic"] += 1
            return self._anthropic_live(json.loads(body))
        if method == "POST" and path == "/v1/files":
            self.calls["openai:upload"] += 1
            ctype = next(v for k, v in headers.items() if k.lower() == "content-type")
            form = parse_multipart(ctype, body)
            fid = self._id("file-")
            self.files[fid] = form["file"]
            assert form["purpose"] == b"batch", form["purpose"]
            return 200, {"id": fid, "object": "file", "bytes": len(form["file"]), "created_at": 1767225600,
                         "filename": "probe-batch.jsonl", "purpose": "batch", "status": "processed"}
        if method == "POST" and path == "/v1/batches":
            self.calls["openai:create"] += 1
            req = json.loads(body)
            assert req["endpoint"] == "/v1/chat/completions" and req["completion_window"] == "24h"
            lines = [json.loads(x) for x in self.files[req["input_file_id"]].splitlines() if x.strip()]
            bid = self._id("batch_")
            self.openai_batches[bid] = {
                "id": bid, "object": "batch", "endpoint": req["endpoint"], "errors": None,
                "input_file_id": req["input_file_id"], "completion_window": "24h", "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": 1767225600, "expires_at": 1767312000,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": req.get("metadata"), "_polls": 0, "_lines": lines,
            }
            return 200, self._public(self.openai_batches[bid])
        if method == "GET" and len(parts) == 3 and parts[:2] == ["v1", "batches"]:
            self.calls["openai:retrieve"] += 1
            return 200, self._public(self._openai_poll(parts[2]))
        if method == "GET" and len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content":
            self.calls["openai:download"] += 1
            return 200, self.files[parts[2]]
        if method == "POST" and path == "/v1/messages/batches":
            self.calls["anthropic:create"] += 1
            self.create_sizes.append(len(body))
            reqs = json.loads(body)["requests"]
            bid = self._id("msgbatch_")
            self.anthropic_inputs[bid] = reqs
            self.anthropic_batches[bid] = {
                "id": bid, "type": "message_batch", "processing_status": "in_progress",
                "request_counts": {"processing": len(reqs), "succeeded": 0, "errored": 0, "canceled": 0,
                                   "expired": 0},
                "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z", "ended_at": None,
                "cancel_initiated_at": None, "archived_at": None, "results_url": None, "_polls": 0,
            }
            return 200, self._public(self.anthropic_batches[bid])
        if method == "GET" and len(parts) == 4 and parts[:3] == ["v1", "messages", "batches"]:
            self.calls["anthropic:retrieve"] += 1
            return 200, self._public(self._anthropic_poll(parts[3]))
        if method == "GET" and len(parts) == 5 and parts[:3] == ["v1", "messages", "batches"] and parts[4] == "results":
            self.calls["anthropic:download"] += 1
            return 200, self.anthropic_results[parts[3]]
        return 404, {"error": {"message": f"fake vendor: no route {key}", "type": "invalid_request_error"}}

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    # -- answers ------------------------------------------------------------------------------------
    def _openai_live(self, body: dict[str, Any]) -> tuple[int, Any]:
        if body["model"] in self.refuse_logprobs and body.get("logprobs"):
            return 400, OPENAI_LOGPROB_REFUSAL
        return 200, openai_chat(body)

    def _anthropic_live(self, params: dict[str, Any]) -> tuple[int, Any]:
        if params["model"] in self.reject_temperature and "temperature" in params:
            return 400, ANTHROPIC_TEMPERATURE
        return 200, anthropic_message(params)

    def _openai_poll(self, bid: str) -> dict[str, Any]:
        b = self.openai_batches[bid]
        if b["status"] in ("completed", "expired", "cancelled", "failed"):
            return b
        b["_polls"] += 1
        if self.hold or b["_polls"] < self.polls_until_done:
            b["status"] = "in_progress"
            return b
        out, err = [], []
        for line in b["_lines"]:
            cid = line["custom_id"]
            kind = self.fail(cid)
            rid = self._id("batch_req_")
            if kind == "expired":
                err.append({"id": rid, "custom_id": cid, "response": None,
                            "error": {"code": "batch_expired", "message": "This request could not be executed before "
                                      "the completion window expired."}})
                continue
            if kind in ("errored", "canceled"):
                err.append({"id": rid, "custom_id": cid, "error": None,
                            "response": {"status_code": 500, "request_id": rid, "body": OPENAI_SERVER_ERROR}})
                continue
            status, body = self._openai_live(line["body"])
            (out if status == 200 else err).append(
                {"id": rid, "custom_id": cid, "response": {"status_code": status, "request_id": rid, "body": body},
                 "error": None})
        self.rng.shuffle(out)
        self.rng.shuffle(err)
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = self._id("file-")
                self.files[fid] = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
                b[name] = fid
        b["status"] = "completed"
        b["request_counts"] = {"total": len(b["_lines"]), "completed": len(out), "failed": len(err)}
        return b

    def _anthropic_poll(self, bid: str) -> dict[str, Any]:
        b = self.anthropic_batches[bid]
        if b["processing_status"] == "ended":
            return b
        b["_polls"] += 1
        if self.hold or b["_polls"] < self.polls_until_done:
            return b
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        rows = []
        for r in self.anthropic_inputs[bid]:
            cid, kind = r["custom_id"], self.fail(r["custom_id"])
            if kind == "errored":
                result: dict[str, Any] = {"type": "errored", "error": ANTHROPIC_API_ERROR}
            elif kind in ("expired", "canceled"):
                result = {"type": kind}
            else:
                status, body = self._anthropic_live(r["params"])
                result = {"type": "succeeded", "message": body} if status == 200 else {"type": "errored", "error": body}
            counts[result["type"]] += 1
            rows.append({"custom_id": cid, "result": result})
        self.rng.shuffle(rows)
        self.anthropic_results[bid] = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
        b.update(processing_status="ended", request_counts=counts, ended_at="2026-01-01T00:30:00Z",
                 results_url=f"{self.base_url}/v1/messages/batches/{bid}/results")
        return b


class LoopbackVendor:
    """The fake vendor on a real 127.0.0.1 port (aiohttp in a background thread)."""

    def __init__(self, fake: FakeVendor) -> None:
        self.fake = fake
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, request: web.Request) -> web.Response:
        status, headers, body = self.fake.handle(request.method, request.path, dict(request.headers),
                                                 await request.read())
        return web.Response(status=status, body=body, content_type=headers["content-type"])

    async def _start(self) -> None:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> LoopbackVendor:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        if not self.fake.base_url:
            self.fake.base_url = self.url
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
