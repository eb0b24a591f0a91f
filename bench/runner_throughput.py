"""Runner throughput against the simulator: 2,000 requests, 50 ms latency, concurrency 64.

Prints achieved requests/s as a fraction of the ideal 64 / 0.05 s = 1,280/s, and the runner
process's CPU time per request (converter + client + validation + grading + SQLite writes).
The simulator runs in its own process, so the two do not share a GIL.

    python bench/runner_throughput.py [--requests 2000] [--concurrency 64] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from probe.prompts import answer_prompt
from probe.runner.run import close_providers, execute, make_plan, new_run, open_providers, run_loop
from probe.runner.spec import RunSpec
from probe.sim import sim_process
from probe.storage import Store
from providers import RetryPolicy


async def one_run(spec: RunSpec, db: Path) -> tuple[float, float, dict[str, int]]:
    """Wall seconds, client CPU seconds and record statuses of one run."""
    plan = make_plan(spec)
    assert len(plan.units) == spec.limit, f"arithmetic has only {len(plan.units)} questions"
    store = Store(db)
    info = new_run(plan, store)
    providers = open_providers(spec)
    cpu0, t0 = time.process_time(), time.perf_counter()
    try:
        await execute(plan, store, info, providers, RetryPolicy(max_attempts=1))
    finally:
        await close_providers(providers)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return wall, cpu, store.status_counts(info.run_id)


async def bare_aiohttp(base_url: str, bodies: list[bytes], concurrency: int) -> tuple[float, float]:
    """The peer: a bare aiohttp client posting the same requests (no parsing, no storage)."""
    sem = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession() as session:

        async def one(body: bytes) -> None:
            async with sem, session.post(base_url + "/chat/completions", data=body,
                                         headers={"content-type": "application/json"}) as r:
                await r.read()

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - t0, time.process_time() - cpu0


def request_bodies(spec: RunSpec) -> list[bytes]:
    plan = make_plan(spec)
    out = []
    for u in plan.units:
        p = answer_prompt(u.question, u.variant)
        out.append(json.dumps({"model": "sim-calibrated", "messages": [m.model_dump() for m in p.messages],
                               "max_tokens": 5, "temperature": 0.0, "logprobs": True,
                               "top_logprobs": spec.top_logprobs}).encode())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    args = ap.parse_args()
    ideal = args.concurrency / (args.latency_ms / 1000.0)
    rates, cpus = [], []
    spec = RunSpec.model_validate({"suites": ["arithmetic"], "models": ["sim/calibrated"], "sources": ["token"],
                                   "variants": ["plain"], "limit": args.requests,
                                   "concurrency": args.concurrency})
    bodies = request_bodies(spec)
    peer_rates = []
    with sim_process("--latency-ms", str(args.latency_ms)) as sim:
        os.environ["SIM_BASE_URL"] = sim.base_url
        for i in range(args.repeat):
            wall, cpu = run_loop(bare_aiohttp(sim.base_url, bodies, args.concurrency))
            peer_rates.append(len(bodies) / wall)
            print(f"peer {i + 1}: bare aiohttp {len(bodies) / wall:,.0f} requests/s "
                  f"({len(bodies) / wall / ideal:.2f} of ideal), client CPU {1000 * cpu / len(bodies):.2f} ms/request")
            with tempfile.TemporaryDirectory() as tmp:
                wall, cpu, counts = run_loop(one_run(spec, Path(tmp) / "bench.db"))
            rate = args.requests / wall
            rates.append(rate)
            cpus.append(cpu / args.requests)
            print(f"run {i + 1}: {rate:,.0f} requests/s ({rate / ideal:.2f} of ideal {ideal:,.0f}/s), "
                  f"client CPU {1000 * cpu / args.requests:.2f} ms/request, statuses {counts}")
    rates.sort()
    cpus.sort()
    peer_rates.sort()
    med = rates[len(rates) // 2]
    peer = peer_rates[len(peer_rates) // 2]
    print(f"median: {med:,.0f} requests/s = {med / ideal:.2f} of ideal (target >= 0.80); "
          f"client CPU {1000 * cpus[len(cpus) // 2]:.2f} ms/request; "
          f"bare aiohttp peer {peer:,.0f} requests/s = {peer / ideal:.2f} of ideal; runner/peer {med / peer:.2f}")
    sys.exit(0)


if __name__ == "__main__":
    main()
