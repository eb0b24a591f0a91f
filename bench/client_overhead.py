"""Client CPU per request of probe's OpenAI-compatible path vs a bare aiohttp client, same run.

A local OpenAI-compatible server runs in a child process (uvicorn + a raw ASGI app answering a
chat completion with ``logprobs``/``top_logprobs: 5`` after a fixed latency). In this process, rounds
alternate between

- **bare**: one aiohttp ClientSession, ``json.dumps`` the body, POST, read, ``json.loads``;
- **probe**: ``providers.create_provider(vllm/...)`` → ``provider.complete(ChatRequest)``: request
  conversion, the same kind of aiohttp session, JSON (orjson), the converter, and the Completion
  validated by pydantic;

and CPU time (user + system of this process) is divided by the number of requests. The figure that
matters is the ratio probe / bare (target ≤ 1.5). Also printed, per response body: stdlib vs
orjson parsing and the converter (which validates the whole Completion once).

    python bench/client_overhead.py [--requests 2000] [--concurrency 64] [--latency-ms 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

TARGET_RATIO = 1.5


def response_body(top_k: int = 5) -> bytes:
    alts = [(" A", -0.31), (" B", -1.52), (" C", -2.9), (" D", -3.4), ("A", -5.5), ("B", -6.1)][:top_k]
    return json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1760000000, "model": "bench-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": " A"}, "finish_reason": "length",
                     "logprobs": {"content": [{"token": " A", "logprob": -0.31, "bytes": [32, 65],
                                               "top_logprobs": [{"token": t, "logprob": v,
                                                                 "bytes": list(t.encode())} for t, v in alts]}]}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31},
    }).encode()


# ----------------------------------------------------------------------------- server (child process)

def serve(port: int, latency_ms: float) -> None:
    import uvicorn

    body = response_body()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    delay = latency_ms / 1000.0

    async def app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                  send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        if delay:
            await asyncio.sleep(delay)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, backlog=4096)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(latency_ms: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency-ms", str(latency_ms)])
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(urllib.request.Request(f"{url}/chat/completions", data=b"{}"), timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("bench server did not start")


# ----------------------------------------------------------------------------- clients

MESSAGES = [{"role": "user", "content": "Question: which letter? A) one B) two C) three D) four. Answer:"}]


async def drive(n: int, concurrency: int, one: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """Run ``n`` calls with ``concurrency`` in flight; (CPU s per request, requests per s)."""
    remaining = n

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await one()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return cpu / max(n, 1), n / wall


async def bare_round(url: str, n: int, concurrency: int, warmup: int) -> tuple[float, float]:
    import aiohttp

    body = {"model": "bench-model", "messages": MESSAGES, "max_tokens": 1, "temperature": 0.0,
            "logprobs": True, "top_logprobs": 5}
    async with aiohttp.ClientSession(headers={"Content-Type": "application/json"},
                                     connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one() -> Any:
            async with session.post(f"{url}/chat/completions", data=json.dumps(body).encode()) as resp:
                payload = json.loads(await resp.read())
            return payload["choices"][0]["logprobs"]["content"][0]["top_logprobs"]

        await drive(warmup, concurrency, one)
        return await drive(n, concurrency, one)


async def probe_round(url: str, n: int, concurrency: int, warmup: int) -> tuple[float, float]:
    from probe.completion import ChatRequest, Message
    from probe.spec import ModelSpec
    from providers import create_provider

    provider = create_provider(ModelSpec.parse("vllm/bench-model"), env={"VLLM_BASE_URL": url})
    req = ChatRequest(messages=(Message(role="user", content=MESSAGES[0]["content"]),), max_tokens=1,
                      temperature=0.0, logprobs=True, top_logprobs=5)
    try:
        async def one() -> Any:
            c = await provider.complete(req)
            assert c.first.tokens and len(c.first.tokens[0].top) == 5
            return c

        await drive(warmup, concurrency, one)
        return await drive(n, concurrency, one)
    finally:
        await provider.aclose()


def micro_costs(reps: int = 3000) -> tuple[float, float, float]:
    """(stdlib json.loads, probe's jsonio.loads, converter incl. pydantic validation) seconds per body."""
    from providers import jsonio
    from providers.openai_chat import LogprobAsk, completion_from_openai

    body = response_body()
    ask = LogprobAsk(requested=True, sent=True, top_k=5)
    t0 = time.process_time()
    for _ in range(reps):
        json.loads(body)
    t1 = time.process_time()
    for _ in range(reps):
        payload = jsonio.loads(body)
    t2 = time.process_time()
    for _ in range(reps):
        completion_from_openai(payload, ask)
    t3 = time.process_time()
    return (t1 - t0) / reps, (t2 - t1) / reps, (t3 - t2) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.latency_ms)
        return
    proc, url = start_server(args.latency_ms)
    try:
        bare: list[tuple[float, float]] = []
        probe: list[tuple[float, float]] = []
        for _ in range(args.rounds):
            bare.append(asyncio.run(bare_round(url, args.requests, args.concurrency, args.warmup)))
            probe.append(asyncio.run(probe_round(url, args.requests, args.concurrency, args.warmup)))
    finally:
        proc.terminate()
        proc.wait(10)
    b_cpu = statistics.median(c for c, _ in bare)
    p_cpu = statistics.median(c for c, _ in probe)
    ratio = p_cpu / b_cpu
    std_loads, fast_loads, conv = micro_costs()
    ideal = args.concurrency / (args.latency_ms / 1000.0) if args.latency_ms else float("nan")
    print(f"{args.requests} requests x {args.rounds} rounds, {args.concurrency} in flight, server latency "
          f"{args.latency_ms:g} ms (ideal {ideal:.0f} req/s); medians; CPU = this process's user+system time")
    print(f"  bare aiohttp    : {b_cpu * 1e3:.3f} ms CPU/request, {statistics.median(r for _, r in bare):.0f} req/s")
    print(f"  probe provider  : {p_cpu * 1e3:.3f} ms CPU/request, {statistics.median(r for _, r in probe):.0f} req/s")
    print(f"  ratio probe/bare: {ratio:.2f}x (target <= {TARGET_RATIO}x): {'OK' if ratio <= TARGET_RATIO else 'OVER'}")
    print(f"  per body: stdlib json.loads {std_loads * 1e6:.0f} us vs probe's (orjson) {fast_loads * 1e6:.0f} us; "
          f"converter incl. full pydantic validation {conv * 1e6:.0f} us")
    print(f"  cpu count {os.cpu_count()}, python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
