"""Benchmark: the HTML report of a 3-model × 4-source × 3-variant run of 10,000 records, end to end.

    /work/venv/bin/python bench/report_speed.py [--records 10000] [--repeat 3]

One run is written to a fresh SQLite database through ``Store`` (synthetic records shaped like the
runner's: three personas with known calibration maps, verbal with numeric and linguistic forms, a
few rate-limit and parse errors). The timed unit is exactly what ``probe report --format html`` and
``probe demo`` do: ``write_html_report(store, run_id, path)`` = load the records, the analysis
(curves, metrics, 1,000 bootstrap resamples per group, 48 groups: 36 per variant + 12 pooled),
12 matplotlib diagrams rendered to SVG, the jinja2 page. Prints the median time, min–max, a
breakdown, the CPU time, and the ratio to the issue's 15 s limit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/reports/_synth.py

from probe.analysis import build_report
from probe.reports import write_html_report
from probe.reports._run import run_page
from probe.storage import Store
from tests.reports._synth import synthetic_run

LIMIT_S = 15.0
MODELS = ["sim/calibrated", "sim/overconfident", "sim/underconfident"]
RECORDS_PER_ITEM = 3 * (1 + 1 + 2 + 1)  # 3 variants × (token, ptrue, verbal numeric + linguistic, consistency)


def build(db: Path, records: int) -> str:
    items = -(-records // (len(MODELS) * RECORDS_PER_ITEM))
    with Store(db) as store:
        return synthetic_run(store, "bench", models=MODELS, items=items, max_records=records).run_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "probe.db"
        run_id = build(db, args.records)
        out = Path(tmp) / "report.html"
        times: list[float] = []
        cpu: list[float] = []
        with Store(db) as store:
            n = len(store.records(run_id))
            groups = {(r.model, r.source, r.variant) for r in store.records(run_id)}
            for _ in range(args.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                write_html_report(store, run_id, out)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            # one breakdown pass
            t0 = time.perf_counter()
            info, records = store.get_run(run_id), store.records(run_id)
            t1 = time.perf_counter()
            rep = build_report(info, records)
            t2 = time.perf_counter()
            run_page(info, rep, len(records))
            t3 = time.perf_counter()
        size = out.stat().st_size
    med = statistics.median(times)
    print(f"records: {n:,} ({len(MODELS)} models × 4 sources × 3 variants; {len(groups)} record groups incl. "
          f"verbal forms)")
    print(f"write_html_report: median {med:.2f} s (min {min(times):.2f}, max {max(times):.2f}, {args.repeat} runs); "
          f"report {size / 1e6:.2f} MB")
    print(f"  CPU time of this process: median {statistics.median(cpu):.2f} s (the wall time above also "
          f"counts waiting for a core when other processes share the machine)")
    print(f"  breakdown (wall): load {t1 - t0:.2f} s · analysis {t2 - t1:.2f} s · 12 diagrams + page {t3 - t2:.2f} s")
    print(f"ratio to the {LIMIT_S:.0f} s limit: {med / LIMIT_S:.2f} ({'within' if med < LIMIT_S else 'OVER'} the limit)")


if __name__ == "__main__":
    main()
