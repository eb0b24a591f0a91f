"""Throughput of probe's simulator: requests/s of small responses at 0 ms added latency.

Runs ``python -m probe.sim serve --port 0`` as a subprocess and drives it with a bare aiohttp
client (64 requests in flight) sending token-source requests (an mc answer prompt from a bundled
suite, ``logprobs: true, top_logprobs: 5, max_tokens: 1``), after a warm-up. Prints requests/s
and the ratio to the 1,000 requests/s target (issue 4). The figure is the ceiling against which
the runner's own throughput is judged.

    python bench/sim_throughput.py [--requests 4000] [--concurrency 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import aiohttp

from probe.prompts import answer_prompt
from probe.sim import sim_process, stats_url
from probe.suite_io import resolve_suite

TARGET_RPS = 1000.0


def _bodies(count: int) -> list[bytes]:
    suite = resolve_suite("capitals")
    items = [q for q in suite.questions if q.kind == "mc"]
    bodies = []
    for i in range(count):
        q = items[i % len(items)]
        v = suite.variants[i % len(suite.variants)]
        prompt = answer_prompt(q, v)
        bodies.append(json.dumps({
            "model": "sim-calibrated",
            "messages": [m.model_dump() for m in prompt.messages],
            "logprobs": True, "top_logprobs": 5, "max_tokens": 1, "temperature": 0,
        }).encode())
    return bodies


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive(url: str, bodies: list[bytes], concurrency: int) -> tuple[float, int]:
    connector = aiohttp.TCPConnector(limit=concurrency)
    errors = 0
    async with aiohttp.ClientSession(connector=connector) as session:
        queue = iter(bodies)

        async def worker() -> None:
            nonlocal errors
            for body in queue:
                async with session.post(url + "/chat/completions", data=body,
                                        headers={"content-type": "application/json"}) as resp:
                    await resp.read()
                    errors += resp.status != 200

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start, errors


async def _main(args: argparse.Namespace) -> None:
    bodies = _bodies(args.requests)
    with sim_process("--no-bundled", "--suite", "capitals") as sim:
        await _drive(sim.base_url, bodies[: min(500, len(bodies))], args.concurrency)  # warm-up
        rates = []
        cpu0 = _cpu_seconds(sim.pid)
        for _ in range(args.repeats):
            elapsed, errors = await _drive(sim.base_url, bodies, args.concurrency)
            if errors:
                raise SystemExit(f"{errors} requests failed")
            rates.append(len(bodies) / elapsed)
        cpu = _cpu_seconds(sim.pid) - cpu0
        async with aiohttp.ClientSession() as s, s.get(stats_url(sim.base_url)) as r:
            served = (await r.json())["by_endpoint"].get("chat.completions", 0)
    median = statistics.median(rates)
    print(f"simulator throughput: {median:,.0f} requests/s (median of {args.repeats}; "
          f"min {min(rates):,.0f}, max {max(rates):,.0f}); {args.requests} requests per run, "
          f"{args.concurrency} in flight, {served} served in total")
    per_request = cpu / (args.requests * args.repeats)
    print(f"server CPU per request: {per_request * 1e6:.0f} µs (user + system of the server process), "
          f"i.e. {1 / per_request:,.0f} requests/s per fully used core")
    print(f"ratio to the {TARGET_RPS:,.0f} requests/s target: {median / TARGET_RPS:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(_main(args))
    else:
        uvloop.run(_main(args))


if __name__ == "__main__":
    main()
