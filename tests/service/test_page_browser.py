"""The / page in headless Chromium: recent runs, schedules and alerts, with links to the reports."""

from __future__ import annotations

import time
import urllib.request
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from probe.runner.spec import RunSpec
from probe.service.alerts import Finding, store_alerts
from probe.service.app import create_app
from probe.service.config import ServiceConfig
from probe.service.runtime import Runtime
from probe.service.scheduler import ScheduleSpec, add_schedule
from providers import RetryPolicy
from tests.service._chromium import dump_dom, screenshot
from tests.service._helpers import serving

pytestmark = pytest.mark.browser


class Rows(HTMLParser):
    """Rows of the page's tables (by table id) and every link."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[dict[str, str]]] = {}
        self.links: list[str] = []
        self._table: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table or ""] = []
        elif tag == "tr" and self._table and "class" in a:
            self.tables[self._table].append(a)
        elif tag == "a":
            self.links.append(a.get("href", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None


def test_index_page_in_headless_chromium(tmp_path: Path, sim_url: str) -> None:
    config = ServiceConfig(db=tmp_path / "probe.db", tick_s=3600)
    rt = Runtime(config, env={"SIM_BASE_URL": sim_url}, policy=RetryPolicy.no_wait())
    store = rt.store
    spec = RunSpec.model_validate({"suites": ["demo"], "models": ["sim/calibrated"], "limit": 3,
                                   "sources": ["token"]})
    sched = add_schedule(store, ScheduleSpec(cron="0 3 * * 1", timezone="Europe/Berlin", run=spec), datetime.now(UTC))
    with serving(create_app(config, rt)) as base:
        req = urllib.request.Request(base + "/v1/runs", data=spec.model_dump_json().encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as resp:
            run_id = __import__("json").loads(resp.read())["run_id"]
        while store.get_run(run_id).status != "completed" or run_id in rt.active:
            time.sleep(0.05)
        store_alerts(store, [Finding(kind="model_id", model="sim/calibrated", previous="sim-calibrated-v1",
                                     current="sim-calibrated-v2", message="sim/calibrated: the API now reports "
                                     "model id 'sim-calibrated-v2' <was v1>")],
                     schedule_id=sched.schedule_id, run_id=run_id, previous_run_id=run_id, now=datetime.now(UTC))

        dom = dump_dom(base + "/", tmp_path / "profile")
        page = Rows()
        page.feed(dom)
        assert [r["data-run-id"] for r in page.tables["runs-table"]] == [run_id]
        assert [r["data-schedule-id"] for r in page.tables["schedules-table"]] == [sched.schedule_id]
        assert len(page.tables["alerts-table"]) == 1
        assert f"/v1/runs/{run_id}/report" in page.links
        assert "&lt;was v1&gt;" in dom  # escaped, not markup
        assert "completed" in dom and "Europe/Berlin" in dom

        # the linked report opens in the same browser
        report = dump_dom(base + f"/v1/runs/{run_id}/report", tmp_path / "profile")
        assert run_id in report and "<svg" in report

        shot = screenshot(base + "/", tmp_path / "index.png", tmp_path / "profile")
        assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
