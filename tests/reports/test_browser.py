"""The demo's report opened in headless Chromium, offline: every diagram drawn, the summary filled,
the unavailable notes shown for sim/nologprobs, and no network request made.

The records come from the real thing: ``probe demo`` (runner + in-process simulator) in a subprocess.
Set PROBE_SCREENSHOT_TO=docs/report.png to refresh the README's screenshot from this run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from probe.storage import Store

pytestmark = pytest.mark.browser

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
if CHROMIUM is None:
    pytest.skip("headless Chromium is not installed (Debian package `chromium`; CI installs it)",
                allow_module_level=True)

# Reads the rendered page (layout included) and writes what it found into the DOM for --dump-dom.
CHECK = """<script>
window.addEventListener("load", () => {
  const figs = [...document.querySelectorAll("figure.diagram")];
  const drawn = figs.filter(f => {
    const svg = f.querySelector("svg");
    if (!svg) return false;
    const r = svg.getBoundingClientRect();
    return r.width > 200 && r.height > 200 && svg.querySelectorAll("path").length > 20;
  });
  const rows = [...document.querySelectorAll("#summary tbody tr")].map(tr =>
    [tr.dataset.model, tr.dataset.source, ...[...tr.cells].map(td => td.textContent.trim())]);
  const notes = [...document.querySelectorAll("p.note.unavailable")].map(p =>
    [p.dataset.model, p.dataset.source, p.textContent.trim(), p.getBoundingClientRect().height > 0]);
  const out = {diagrams: figs.map(f => f.dataset.title), drawn: drawn.length, rows, notes,
               resources: performance.getEntriesByType("resource").map(e => e.name)};
  const pre = document.createElement("pre");
  pre.id = "probe-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium(user_data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={user_data}",
           # offline: every host resolves to nothing and any proxied request goes nowhere
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(report path, database) of a `probe demo` run."""
    work = tmp_path_factory.mktemp("demo")
    db = work / "results" / "probe.db"
    env = {k: v for k, v in os.environ.items() if k != "SIM_BASE_URL"}
    proc = subprocess.run([sys.executable, "-m", "probe", "demo", "--db", str(db)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"report: (\S+)", proc.stdout)
    assert match, proc.stdout[-2000:]
    report = Path(match.group(1))
    assert report.is_absolute() or (work / report).exists()
    return (report if report.is_absolute() else work / report), db


def test_demo_report_in_chromium(demo: tuple[Path, Path], tmp_path: Path) -> None:
    report, db = demo
    html = report.read_text(encoding="utf-8")
    page = tmp_path / "check.html"
    page.write_text(html.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()).stdout
    found = re.search(r'<pre id="probe-check">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    check = json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                       .replace("&amp;", "&"))

    with Store(db) as store:
        run = store.list_runs()[0]
        statuses = store.record_statuses(run.run_id)
    served = {(m, src) for (m, _, _, _, src, _), st in statuses.items() if st == "ok"}
    cells = {(m, src) for (m, _, _, _, src, _) in statuses}
    assert len(cells) == 12  # 3 models × 4 sources

    assert check["resources"] == []  # nothing fetched: the page is self-contained
    assert sorted(check["diagrams"]) == sorted(f"{m} · {s}" for m, s in served)
    assert check["drawn"] == len(served)  # every diagram laid out with its plot drawn
    rows = {(r[0], r[1]): r[2:] for r in check["rows"]}
    assert set(rows) == cells
    for key, cols in rows.items():
        assert all(c != "" for c in cols[:11]), (key, cols)
        if key in served:
            assert re.match(r"0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]$", cols[3]), (key, cols)  # accuracy [interval]
        else:
            assert cols[3] == "–" and int(cols[9]) > 0  # not scored, and counted as unavailable
    notes = {(m, s): (text, visible) for m, s, text, visible in check["notes"]}
    assert set(notes) == cells - served
    for source in ("token", "ptrue"):
        text, visible = notes[("sim/nologprobs", source)]
        assert visible and text.startswith(f"{source}: unavailable — ")


def test_demo_report_screenshot(demo: tuple[Path, Path], tmp_path: Path) -> None:
    report, _ = demo
    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile", "--window-size=1400,2600", "--hide-scrollbars", "--virtual-time-budget=10000",
             f"--screenshot={shot}", report.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1400, 2600)
    assert len(data) > 100_000  # a page with figures, not a blank one
    target = os.environ.get("PROBE_SCREENSHOT_TO")
    if target:
        shutil.copyfile(shot, target)
