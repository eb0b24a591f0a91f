"""Drift alerts: a scheduled run compared with the previous run of the same schedule.

For each (model, source, variant) the two runs share, accuracy and ECE are compared by the paired
bootstrap over items (probe.analysis); a difference whose interval excludes zero is drift. A change
of the model id the API reports is drift too. ``drift_findings`` is pure; storing alerts and
posting them to a webhook (with retries, tenacity) are the IO around it.
"""

from __future__ import annotations

import json
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Literal

import aiohttp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryError, retry_if_exception_type, stop_after_attempt, wait_exponential
from tenacity.wait import WaitBaseT

from probe.analysis.bootstrap import Interval, Metric, paired_bootstrap
from probe.record import Record
from probe.service.leases import iso
from probe.storage import RunInfo, Store

DriftKind = Literal["accuracy", "ece", "model_id"]
DRIFT_METRICS: tuple[Metric, ...] = ("accuracy", "ece")


class DriftSettings(BaseModel):
    """How runs are compared."""

    model_config = ConfigDict(frozen=True)

    bins: int = Field(default=10, ge=1, le=100, description="Equal-width bins for ECE.")
    resamples: int = Field(default=1000, ge=100, description="Paired bootstrap resamples.")
    seed: int = Field(default=0, description="Bootstrap seed.")
    level: float = Field(default=0.95, gt=0, lt=1, description="Interval coverage.")


class Finding(BaseModel):
    """One detected change between two runs of a schedule."""

    model_config = ConfigDict(frozen=True)

    kind: DriftKind = Field(description="accuracy or ece (paired bootstrap), or model_id (reported id changed).")
    model: str = Field(description="provider/model.")
    source: str | None = Field(default=None, description="Confidence source (null for model_id).")
    variant: str | None = Field(default=None, description="Prompt variant (null for model_id).")
    previous: float | str | None = Field(description="Value in the previous run.")
    current: float | str | None = Field(description="Value in this run.")
    difference: float | None = Field(default=None, description="current − previous.")
    ci: Interval | None = Field(default=None, description="Paired bootstrap interval of the difference.")
    p_value: float | None = Field(default=None, description="Two-sided bootstrap p-value.")
    items: int | None = Field(default=None, description="Items both runs scored.")
    message: str = Field(description="One line for people.")


class Alert(Finding):
    """A stored finding."""

    alert_id: str = Field(description="Alert id.")
    created_at: datetime = Field(description="When it was raised (UTC).")
    schedule_id: str | None = Field(description="Schedule whose runs were compared.")
    run_id: str = Field(description="The newer run.")
    previous_run_id: str = Field(description="The run it was compared with.")
    webhook_status: str | None = Field(default=None, description="delivered, failed: <why>, or null (no webhook).")


def _scored(records: list[Record]) -> dict[tuple[str, str, str], tuple[list[str], list[float], list[float]]]:
    groups: dict[tuple[str, str, str], tuple[list[str], list[float], list[float]]] = defaultdict(
        lambda: ([], [], []))
    for r in records:
        if r.status != "ok" or r.confidence is None or r.correct is None:
            continue
        items, conf, correct = groups[(r.model, r.source, r.variant)]
        items.append(f"{r.suite}\x1f{r.item_id}")
        conf.append(r.confidence)
        correct.append(1.0 if r.correct else 0.0)
    return groups


def drift_findings(previous: RunInfo, previous_records: list[Record], current: RunInfo,
                   current_records: list[Record], settings: DriftSettings | None = None) -> list[Finding]:
    """Changes beyond the paired-bootstrap interval, and changed reported model ids (pure)."""
    s = settings or DriftSettings()
    out: list[Finding] = []
    for model in current.models:
        was, now = previous.model_ids.get(model), current.model_ids.get(model)
        if was and now and was != now:
            out.append(Finding(kind="model_id", model=model, previous=was, current=now,
                               message=f"{model}: the API now reports model id {now!r} (was {was!r})"))
    before, after = _scored(previous_records), _scored(current_records)
    for key in sorted(set(before) & set(after)):
        model, source, variant = key
        ia, ca, ya = after[key]
        ib, cb, yb = before[key]
        for metric in DRIFT_METRICS:
            d = paired_bootstrap(np.asarray(ia), ca, ya, np.asarray(ib), cb, yb, metric=metric, bins=s.bins,
                                 resamples=s.resamples, seed=s.seed, level=s.level)
            if d.difference is None or d.ci is None or d.ci[0] <= 0.0 <= d.ci[1]:
                continue
            out.append(Finding(
                kind=metric, model=model, source=source, variant=variant, previous=d.b, current=d.a,
                difference=d.difference, ci=d.ci, p_value=d.p_value, items=d.items,
                message=(f"{model} / {source} / {variant}: {metric} {d.b:.3f} → {d.a:.3f} "
                         f"(difference {d.difference:+.3f}, {s.level:.0%} interval "
                         f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}], {d.items} items)"),
            ))
    return out


# -- storage -----------------------------------------------------------------------------------

def store_alerts(store: Store, findings: list[Finding], *, schedule_id: str | None, run_id: str,
                 previous_run_id: str, now: datetime) -> list[Alert]:
    alerts = [Alert(**f.model_dump(), alert_id="a" + secrets.token_hex(6), created_at=now,
                    schedule_id=schedule_id, run_id=run_id, previous_run_id=previous_run_id) for f in findings]
    if alerts:
        with store.transaction() as c:
            c.executemany(
                "INSERT INTO alerts (alert_id, created_at, schedule_id, run_id, data, webhook_status) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(a.alert_id, iso(now), a.schedule_id, a.run_id, a.model_dump_json(), None) for a in alerts])
    return alerts


def set_webhook_status(store: Store, alert_ids: list[str], status: str) -> None:
    with store.transaction() as c:
        c.executemany("UPDATE alerts SET webhook_status = ? WHERE alert_id = ?", [(status, a) for a in alert_ids])


def list_alerts(store: Store, *, schedule_id: str | None = None, run_id: str | None = None,
                limit: int = 100, offset: int = 0) -> tuple[int, list[Alert]]:
    """(total matching, one page newest first)."""
    where, args = [], []
    if schedule_id is not None:
        where.append("schedule_id = ?")
        args.append(schedule_id)
    if run_id is not None:
        where.append("run_id = ?")
        args.append(run_id)
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    with store.transaction() as c:
        total = int(c.execute("SELECT COUNT(*) FROM alerts" + clause, args).fetchone()[0])
        rows = c.execute("SELECT data, webhook_status FROM alerts" + clause +
                         " ORDER BY created_at DESC, alert_id LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
    return total, [Alert.model_validate_json(r[0]).model_copy(update={"webhook_status": r[1]}) for r in rows]


# -- webhook -----------------------------------------------------------------------------------

class WebhookPayload(BaseModel):
    """What the webhook receives (one POST per compared run)."""

    event: Literal["probe.drift"] = Field(default="probe.drift", description="Event type.")
    schedule_id: str | None = Field(description="Schedule whose runs were compared.")
    run_id: str = Field(description="The newer run.")
    previous_run_id: str = Field(description="The run it was compared with.")
    alerts: list[Alert] = Field(description="The alerts raised.")


class WebhookFailed(Exception):
    """A delivery attempt failed in a way worth retrying."""


Poster = Callable[[str, bytes], Awaitable[int]]


async def aiohttp_post(url: str, body: bytes, timeout_s: float = 10.0) -> int:
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session, session.post(
            url, data=body, headers={"Content-Type": "application/json", "User-Agent": "probe-webhook"}) as resp:
        await resp.read()
        return resp.status


async def deliver(url: str, payload: WebhookPayload, *, attempts: int = 4,
                  wait: WaitBaseT | None = None, post: Poster = aiohttp_post) -> str:
    """POST ``payload`` as JSON with retries (5xx, 429 and connection errors are retried; other 4xx are
    not). Returns ``delivered`` or ``failed: <reason>``; never raises for delivery problems."""
    body = json.dumps(payload.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")

    async def once() -> str:
        try:
            status = await post(url, body)
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise WebhookFailed(f"{type(e).__name__}") from None
        if status >= 500 or status == 429:
            raise WebhookFailed(f"HTTP {status}")
        return "delivered" if status < 300 else f"failed: HTTP {status}"

    try:
        async for attempt in AsyncRetrying(stop=stop_after_attempt(attempts),
                                           wait=wait if wait is not None else wait_exponential(multiplier=1, max=30),
                                           retry=retry_if_exception_type(WebhookFailed), reraise=False):
            with attempt:
                return await once()
    except RetryError as e:
        last = e.last_attempt.exception()
        return f"failed: {last} after {attempts} attempts"
    raise AssertionError("unreachable")  # pragma: no cover
