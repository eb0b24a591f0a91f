"""The simulator as a raw ASGI application (no framework: the hot path is a few dict look-ups).

Routes: ``POST /v1/chat/completions`` (OpenAI), ``POST /v1/messages`` (Anthropic),
``GET /v1/models`` (OpenAI shape, or Anthropic's when an ``anthropic-version`` header is sent),
``GET /v1/models/{id}``, ``GET /sim/stats``, ``POST /sim/stats/reset``, ``GET /sim/health``.
Per-request headers: ``X-Sim-Fault: <kind>`` (or ``none``), ``X-Sim-Latency-Ms: <ms>``,
``X-Sim-Retry-After: <s>``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from hashlib import blake2b
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from probe.sim._faults import NO_FAULT, FaultPlan, FaultSpecError, Latency, fault_kind
from probe.sim._generate import Generation, Generator, truncate
from probe.sim._knowledge import Knowledge, Resolved
from probe.sim._personas import PERSONAS, Persona
from probe.sim._requests import RequestError, SimRequest, parse_anthropic, parse_openai
from probe.sim._stats import Stats
from probe.sim._wire import (
    HTTP_ERROR_FAULTS,
    Api,
    anthropic_message,
    anthropic_models,
    error_body,
    fault_response,
    logprobs_content,
    openai_chat,
    openai_models,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MODEL_VERSION = "v1"
_JSON = (b"content-type", b"application/json")
_HANG_POLL_S = 0.1
MAX_REPEAT_KEYS = 1_000_000
TRUNCATED_LOG = "ASGI callable returned without completing response."


class _TruncationLogFilter(logging.Filter):
    """The 'truncated' fault ends responses early on purpose; uvicorn's error line about it is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != TRUNCATED_LOG


logging.getLogger("uvicorn.error").addFilter(_TruncationLogFilter())


class SimConfig(BaseModel):
    """Behaviour of one simulator instance."""

    model_config = ConfigDict(frozen=True)

    seed: int = Field(default=0, description="Seed of the latent item model (which answers are right).")
    fault: FaultPlan = Field(default_factory=FaultPlan, description="Share of requests per fault kind.")
    latency: Latency = Field(default_factory=Latency, description="Added latency per request.")
    retry_after_s: float = Field(default=1.0, ge=0, description="retry-after sent with 429s, seconds.")
    hang_s: float = Field(default=600.0, gt=0, description="How long a 'hang' lasts if the client waits.")


class _Done(Exception):
    """The client went away before the request body was read."""


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise _Done
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            return b"".join(chunks)


async def _send(send: Send, status: int, payload: bytes, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [_JSON, (b"content-length", str(len(payload)).encode()), *headers]})
    await send({"type": "http.response.body", "body": payload})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class SimApp:
    """ASGI callable; holds the knowledge, the counters and the fault sequence."""

    def __init__(self, knowledge: Knowledge, config: SimConfig | None = None) -> None:
        self.knowledge = knowledge
        self.config = config or SimConfig(seed=knowledge.seed)
        self.generator = Generator(knowledge.seed)
        self.stats = Stats()
        self.request_number = 0
        self.closing = False
        self._occurrences: dict[tuple[str, str, str | None, float, str], int] = {}
        self._logprob_cache: dict[tuple[int, int], tuple[Generation, list[dict[str, Any]]]] = {}
        digest = blake2b(f"probe-sim:{knowledge.seed}".encode(), digest_size=4).hexdigest()
        self.fingerprint = f"fp_sim{digest}"
        self.model_ids = [p.model_id for p in PERSONAS.values()]

    def reset(self) -> None:
        """Zero the counters and restart the fault, latency and repeat-sample sequences."""
        self.stats = Stats()
        self.request_number = 0
        self._occurrences.clear()

    def close(self) -> None:
        """Let hanging requests finish (called from any thread before shutdown)."""
        self.closing = True

    # -- ASGI ---------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        try:
            if path == "/v1/chat/completions" and method == "POST":
                await self._complete(scope, receive, send, "openai")
            elif path == "/v1/messages" and method == "POST":
                await self._complete(scope, receive, send, "anthropic")
            elif path == "/v1/models" and method == "GET":
                await self._models(scope, send)
            elif path.startswith("/v1/models/") and method == "GET":
                await self._model(scope, send, path.removeprefix("/v1/models/"))
            elif path == "/sim/stats" and method == "GET":
                await _send(send, 200, orjson.dumps(self.stats.snapshot()))
            elif path == "/sim/stats/reset" and method == "POST":
                self.reset()
                await _send(send, 200, orjson.dumps({"reset": True}))
            elif path in ("/sim/health", "/health") and method == "GET":
                await _send(send, 200, orjson.dumps({"status": "ok", "models": self.model_ids,
                                                     "questions": self.knowledge.size}))
            else:
                known = path in ("/v1/chat/completions", "/v1/messages", "/v1/models", "/sim/stats",
                                 "/sim/stats/reset")
                status = 405 if known else 404
                api: Api = "anthropic" if path == "/v1/messages" else "openai"
                msg = f"{method} {path}: " + ("method not allowed" if known else "no such endpoint")
                self.stats.count("other", None, "method_not_allowed" if known else "not_found")
                await _send(send, status, orjson.dumps(error_body(api, status, msg, _request_id())))
        except _Done:
            return

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- models -------------------------------------------------------------------------
    async def _models(self, scope: Scope, send: Send) -> None:
        self.stats.count("models", None, "ok")
        if _header(scope, b"anthropic-version") is not None:
            body = anthropic_models(self.model_ids, "2026-01-01T00:00:00Z")
        else:
            body = openai_models(self.model_ids, 1767225600)
        await _send(send, 200, orjson.dumps(body))

    async def _model(self, scope: Scope, send: Send, model_id: str) -> None:
        if model_id not in self.model_ids:
            self.stats.count("models", None, "not_found")
            msg = f"The model `{model_id}` does not exist or you do not have access to it."
            api: Api = "anthropic" if _header(scope, b"anthropic-version") is not None else "openai"
            await _send(send, 404, orjson.dumps(error_body(api, 404, msg, _request_id(), code="model_not_found")))
            return
        self.stats.count("models", None, "ok")
        if _header(scope, b"anthropic-version") is not None:
            body: dict[str, Any] = {"type": "model", "id": model_id, "display_name": model_id,
                                    "created_at": "2026-01-01T00:00:00Z"}
        else:
            body = {"id": model_id, "object": "model", "created": 1767225600, "owned_by": "probe-sim"}
        await _send(send, 200, orjson.dumps(body))

    # -- completions --------------------------------------------------------------------
    async def _complete(self, scope: Scope, receive: Receive, send: Send, api: Api) -> None:
        endpoint = "chat.completions" if api == "openai" else "messages"
        raw = await _read_body(receive)
        number = self.request_number
        self.request_number += 1
        rid = _request_id()
        id_header = (b"x-request-id" if api == "openai" else b"request-id", rid.encode())
        try:
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise RequestError(400, "We could not parse the JSON body of your request.") from None
            req = parse_openai(obj) if api == "openai" else parse_anthropic(obj)
            fault, delay, retry_after = self._fault_for(scope, number)
        except RequestError as e:
            outcome = "not_found" if e.status == 404 else "bad_request"
            self.stats.count(endpoint, None, outcome)
            body = error_body(api, e.status, e.message, rid, param=e.param, code=e.code)
            await _send(send, e.status, orjson.dumps(body), [id_header])
            return
        resolved = self.knowledge.resolve(req.prompt, req.system)
        self.stats.count(endpoint, req.persona.name, fault or "ok", resolved.elicitation)
        if delay > 0:
            await asyncio.sleep(delay)
        if fault in HTTP_ERROR_FAULTS:
            assert fault is not None
            status, body, extra = fault_response(api, fault, model=req.model, request_id=rid,
                                                 retry_after=retry_after)
            await _send(send, status, orjson.dumps(body), [id_header, *extra])
            return
        if fault == "hang" and await self._hang(receive):
            return
        gens = self._generate(req, resolved, api)
        self.stats.choices += len(gens)
        model_reported = f"{req.persona.model_id}-{MODEL_VERSION}"
        if api == "openai":
            want = req.logprobs and req.persona.logprobs and fault != "drop_logprobs"
            lps = [self._logprobs(g, req.top_logprobs) if want else None for g in gens]
            payload = orjson.dumps(openai_chat(rid="chatcmpl-" + rid[4:], created=int(time.time()),
                                               model=model_reported, gens=gens, logprobs=lps,
                                               prompt_tokens=req.prompt_tokens, fingerprint=self.fingerprint))
        else:
            payload = orjson.dumps(anthropic_message(rid="msg_" + rid[4:], model=model_reported, gen=gens[0],
                                                     input_tokens=req.prompt_tokens))
        if fault == "malformed":
            payload = payload[: len(payload) * 2 // 3]
        if fault == "truncated":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [_JSON, (b"content-length", str(len(payload)).encode()), id_header]})
            await send({"type": "http.response.body", "body": payload[: len(payload) // 2], "more_body": True})
            return  # the server closes the connection with the body incomplete
        await _send(send, 200, payload, [id_header])

    def _fault_for(self, scope: Scope, number: int) -> tuple[str | None, float, float]:
        cfg = self.config
        forced = _header(scope, b"x-sim-fault")
        try:
            if forced is not None:
                fault = None if forced.strip().lower() == NO_FAULT else fault_kind(forced)
            else:
                fault = cfg.fault.draw(number)
        except FaultSpecError as e:
            raise RequestError(400, f"X-Sim-Fault: {e}", "X-Sim-Fault") from None
        delay = cfg.latency.seconds(number)
        latency = _header(scope, b"x-sim-latency-ms")
        retry = _header(scope, b"x-sim-retry-after")
        try:
            if latency is not None:
                delay = max(0.0, float(latency)) / 1000.0
            retry_after = max(0.0, float(retry)) if retry is not None else cfg.retry_after_s
        except ValueError:
            raise RequestError(400, "X-Sim-Latency-Ms / X-Sim-Retry-After: expected a number") from None
        return fault, delay, retry_after

    async def _hang(self, receive: Receive) -> bool:
        """Wait until the client disconnects (True) or ``hang_s`` passes / the server closes (False)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.hang_s
        while not self.closing and loop.time() < deadline:
            try:
                msg = await asyncio.wait_for(receive(), timeout=_HANG_POLL_S)
            except TimeoutError:
                continue
            if msg["type"] == "http.disconnect":
                return True
        return False

    def _generate(self, req: SimRequest, resolved: Resolved, api: Api) -> list[Generation]:
        persona: Persona = req.speaker  # its system-prompted form when there is a system prompt
        stream = "g"
        if req.temperature > 0 and resolved.state is not None:
            if req.seed is not None:
                stream = f"s{req.seed}"
            else:
                key = (persona.name, resolved.text_key, req.system, req.temperature, api)
                seen = self._occurrences.get(key, 0)
                if len(self._occurrences) >= MAX_REPEAT_KEYS:
                    self._occurrences.clear()
                self._occurrences[key] = seen + 1
                stream = f"o{seen}"
        gens = []
        for j in range(req.n):
            if resolved.state is None:
                gen = self.generator.generate(persona, resolved, 0)
            else:
                cand = self.generator.choose(persona, resolved, req.temperature, stream, j)
                gen = self.generator.generate(persona, resolved, cand)
            gens.append(truncate(gen, req.max_tokens, req.stops))
        return gens

    def _logprobs(self, gen: Generation, top: int) -> list[dict[str, Any]]:
        key = (id(gen), top)
        hit = self._logprob_cache.get(key)
        if hit is not None and hit[0] is gen:
            return hit[1]
        content = logprobs_content(gen, top)
        if len(self._logprob_cache) > 200_000:
            self._logprob_cache.clear()
        self._logprob_cache[key] = (gen, content)
        return content


def _request_id() -> str:
    return "req_" + os.urandom(12).hex()
