"""The HTTP API: FastAPI routes over a Runtime (workers, scheduler) and the Store.

Every route but /healthz and /login needs the bearer token when one is configured. JSON bodies
have the shapes of the CLI's JSON outputs (the metrics are ``probe report --format json``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Literal
from urllib.parse import parse_qs

import jinja2
from fastapi import APIRouter, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.security import HTTPBearer
from starlette.middleware import Middleware

from probe import __version__
from probe.analysis import POOLED, RunReport
from probe.analysis.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from probe.record import SOURCES
from probe.reports import (
    Comparison,
    History,
    build_comparison,
    history_from_store,
    make_entries,
    render_comparison_html,
    render_history_html,
    render_run_report,
)
from probe.runner.spec import RunSpec
from probe.service import prometheus, queries
from probe.service.alerts import list_alerts
from probe.service.config import ServiceConfig
from probe.service.middleware import TOKEN_COOKIE, BodyLimit, TokenAuth, token_matches
from probe.service.runtime import Conflict, Runtime, SpecRejected
from probe.service.scheduler import (
    Schedule,
    ScheduleSpec,
    add_schedule,
    get_schedule,
    list_schedules,
    remove_schedule,
)
from probe.service.schemas import (
    AlertPage,
    Health,
    RecordPage,
    RunPage,
    RunProgress,
    RunView,
    ScheduleList,
    Submitted,
)
from probe.storage import RunInfo, RunStatus

FINAL = ("completed", "failed", "cancelled")
JSON = "application/json"

_templates = jinja2.Environment(loader=jinja2.PackageLoader("probe.service", "templates"),
                                autoescape=jinja2.select_autoescape(["html", "jinja"]))


def _not_found(what: str) -> JSONResponse:
    return JSONResponse({"detail": what}, status_code=404)


def _rejected(loc: tuple[str | int, ...], message: str) -> JSONResponse:
    return JSONResponse({"detail": [{"loc": list(loc), "msg": message, "type": "value_error"}]}, status_code=422)


def create_app(config: ServiceConfig, runtime: Runtime | None = None) -> FastAPI:
    """The ASGI app; ``runtime`` defaults to one over ``config.db`` (tests pass their own clock/env)."""
    rt = runtime or Runtime(config)
    store = rt.store
    token = config.token.get_secret_value() if config.token is not None else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await rt.start()
        try:
            yield
        finally:
            await rt.stop()

    app = FastAPI(
        title="probe", version=__version__, lifespan=lifespan,
        description="Calibration of hosted LLMs: submit runs, read metrics and reports, schedule re-measurements "
                    "and receive drift alerts. Send `Authorization: Bearer <PROBE_API_TOKEN>`.",
        middleware=[Middleware(BodyLimit, limit=config.max_body_bytes), Middleware(TokenAuth, token=token)],
    )
    app.state.runtime = rt
    bearer = HTTPBearer(auto_error=False, description="PROBE_API_TOKEN")
    api = APIRouter(prefix="/v1", dependencies=[Security(bearer)])

    @app.exception_handler(SpecRejected)
    async def _spec_rejected(_: Request, e: SpecRejected) -> JSONResponse:
        return _rejected(e.loc, e.message)

    @app.exception_handler(Conflict)
    async def _conflict(_: Request, e: Conflict) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, status_code=409)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(err.get("loc", ())), "msg": str(err.get("msg", "")), "type": err.get("type", "")}
                  for err in e.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    def run_or_none(run_id: str) -> RunInfo | None:
        try:
            return store.get_run(run_id)
        except KeyError:
            return None

    # -- runs ---------------------------------------------------------------------------------
    @api.post("/runs", status_code=202, response_model=Submitted, tags=["runs"],
              responses={422: {"description": "Invalid spec, unknown suite/provider or missing key."}})
    async def submit_run(spec: RunSpec) -> Submitted:
        """Queue a run (same fields and defaults as `probe run`); it executes in a background worker."""
        plan = await rt.prepare(spec)
        info = rt.submit(plan)
        return Submitted(run_id=info.run_id, status=info.status)

    @api.get("/runs", response_model=RunPage, tags=["runs"])
    async def runs(status: RunStatus | None = None, suite: str | None = None, model: str | None = None,
                   limit: Annotated[int, Query(ge=1, le=1000)] = 50,
                   offset: Annotated[int, Query(ge=0)] = 0) -> RunPage:
        """Runs, newest first, filtered by status, suite name and model."""
        found = [r for r in store.list_runs(status=status)
                 if (suite is None or suite in {s.name for s in r.suites})
                 and (model is None or model in r.models)]
        return RunPage(total=len(found), offset=offset, limit=limit, runs=found[offset: offset + limit])

    @api.get("/runs/{run_id}", response_model=RunView, tags=["runs"], responses={404: {}})
    async def run_view(run_id: str) -> RunView | JSONResponse:
        """A run's state, progress and record counts."""
        info = run_or_none(run_id)
        if info is None:
            return _not_found(f"no run {run_id!r}")
        return view_of(info)

    def view_of(info: RunInfo) -> RunView:
        counts = store.status_counts(info.run_id)
        written = sum(counts.values())
        progress = RunProgress(planned_records=info.planned_records, records=written,
                               fraction=written / info.planned_records if info.planned_records else 0.0,
                               live=info.run_id in rt.active)
        active = rt.active.get(info.run_id)
        if active is not None and active.engine is not None:
            p = active.engine.progress
            progress = progress.model_copy(update={"units_total": active.units_total, "units_done": p.units_done,
                                                   "calls": p.calls, "cache_hits": p.cache_hits,
                                                   "errors": p.errors})
        origin = queries.origin_of(store, info.run_id)
        return RunView(**info.model_dump(), progress=progress, counts=counts,
                       origin=origin[0] if origin else None, schedule_id=origin[1] if origin else None)

    @api.post("/runs/{run_id}/cancel", response_model=RunView, tags=["runs"], responses={404: {}, 409: {}})
    async def cancel_run(run_id: str) -> RunView | JSONResponse:
        """Cancel a queued or running run (what finished stays stored)."""
        if run_or_none(run_id) is None:
            return _not_found(f"no run {run_id!r}")
        return view_of(await rt.cancel(run_id))

    @api.get("/runs/{run_id}/metrics", response_model=RunReport, tags=["results"], responses={404: {}})
    async def metrics(run_id: str, bins: Annotated[int, Query(ge=1, le=1000)] = 10,
                      binning: Literal["width", "mass"] = "width",
                      resamples: Annotated[int, Query(ge=1, le=100_000)] = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> Response:
        """The report JSON of `probe report --format json` (computed once per finished run)."""
        info = run_or_none(run_id)
        if info is None:
            return _not_found(f"no run {run_id!r}")

        body = await rt.metrics_body(info, bins=bins, binning=binning, resamples=resamples, seed=seed)
        return Response(body, media_type=JSON)

    @api.get("/runs/{run_id}/report", response_class=HTMLResponse, tags=["results"], responses={404: {}})
    async def html_report(run_id: str, bins: Annotated[int, Query(ge=1, le=1000)] = 10,
                          binning: Literal["width", "mass"] = "width",
                          resamples: Annotated[int, Query(ge=1, le=100_000)] = DEFAULT_RESAMPLES,
                          seed: int = DEFAULT_SEED) -> Response:
        """The self-contained HTML report of the run (as `probe report --format html`)."""
        info = run_or_none(run_id)
        if info is None:
            return _not_found(f"no run {run_id!r}")

        def work() -> bytes:
            html = render_run_report(info, store.records(run_id), bins=bins, binning=binning, resamples=resamples,
                                     seed=seed)
            return html.encode("utf-8")

        return HTMLResponse(await rt.cached(info, ("report", bins, binning, resamples, seed), work))

    # -- across runs ----------------------------------------------------------------------------
    @api.get("/compare", response_model=Comparison, tags=["results"], responses={404: {}, 422: {}})
    async def compare(runs: Annotated[str, Query(description="Comma-separated run ids.")],
                      models: Annotated[str | None, Query(description="Comma-separated models (first = "
                                                                      "baseline).")] = None,
                      bins: Annotated[int, Query(ge=1, le=1000)] = 10, binning: Literal["width", "mass"] = "width",
                      resamples: Annotated[int, Query(ge=1, le=100_000)] = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED, format: Literal["json", "html"] = "json") -> Response:
        """Models side by side on shared items with paired differences (as `probe compare --format json`)."""
        ids = list(dict.fromkeys(r.strip() for r in runs.split(",") if r.strip()))
        infos = [run_or_none(r) for r in ids]
        missing = [r for r, i in zip(ids, infos, strict=True) if i is None]
        if missing:
            return _not_found(f"no run {missing[0]!r}")
        found = [i for i in infos if i is not None]
        wanted = [m.strip() for m in models.split(",") if m.strip()] if models else None
        if wanted is not None and len(set(wanted)) != len(wanted):
            raise SpecRejected(("query", "models"), f"a model is listed twice: {models}")

        def work() -> bytes:
            records = [store.records(r.run_id) for r in found]
            try:
                entries, entry_records, entry_runs = make_entries(found, records, wanted)
            except ValueError as e:
                raise SpecRejected(("query", "models"), str(e)) from None
            if len(entries) < 2:
                raise SpecRejected(("query", "runs"), f"nothing to compare: {len(entries)} model(s) in "
                                   f"{', '.join(ids)}; give two runs, or one run with models=A,B")
            c = build_comparison(entry_runs, entries, entry_records, bins=bins, binning=binning,
                                 resamples=resamples, seed=seed)
            if format == "html":
                return render_comparison_html(c).encode("utf-8")
            return json.dumps(c.model_dump(mode="json"), ensure_ascii=False, allow_nan=False).encode()

        key = ("compare", tuple((i.run_id, i.status, i.finished_at) for i in found), tuple(wanted or ()), bins,
               binning, resamples, seed, format)
        if all(i.status in FINAL for i in found):
            body = await rt.results.get(key, lambda: asyncio.to_thread(work))
        else:
            body = await asyncio.to_thread(work)
        return Response(body, media_type="text/html; charset=utf-8" if format == "html" else JSON)

    @api.get("/history", response_model=History, tags=["results"], responses={404: {}, 422: {}})
    async def history(suite: str, model: str,
                      source: Annotated[str | None, Query(description="Comma-separated sources.")] = None,
                      variant: str = POOLED, fingerprint: str | None = None,
                      bins: Annotated[int, Query(ge=1, le=1000)] = 10, binning: Literal["width", "mass"] = "width",
                      resamples: Annotated[int, Query(ge=1, le=100_000)] = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED, format: Literal["json", "html"] = "json") -> Response:
        """A model's figures over time on one suite version, drift flagged (as `probe history --format json`)."""
        sources = [x.strip() for x in source.split(",") if x.strip()] if source else None
        bad = [x for x in sources or [] if x not in SOURCES]
        if bad:
            raise SpecRejected(("query", "source"), f"unknown source {bad[0]!r} (one of {', '.join(SOURCES)})")

        def work() -> bytes | str:
            try:
                h = history_from_store(store, suite=suite, model=model, sources=sources, fingerprint=fingerprint,
                                       variant=variant, bins=bins, binning=binning, resamples=resamples, seed=seed)
            except ValueError as e:  # no run matches
                return str(e)
            if format == "html":
                return render_history_html(h).encode("utf-8")
            return json.dumps(h.model_dump(mode="json"), ensure_ascii=False, allow_nan=False).encode()

        body = await asyncio.to_thread(work)
        if isinstance(body, str):
            return _not_found(body)
        return Response(body, media_type="text/html; charset=utf-8" if format == "html" else JSON)

    @api.get("/runs/{run_id}/records", response_model=RecordPage, tags=["results"], responses={404: {}})
    async def records(run_id: str, offset: Annotated[int, Query(ge=0)] = 0,
                      limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
                      format: Literal["json", "jsonl"] = "json") -> Response:
        """One page of the run's records; `format=jsonl` gives the lines of `probe export`."""
        if run_or_none(run_id) is None:
            return _not_found(f"no run {run_id!r}")
        page = store.records(run_id, limit=limit, offset=offset)
        if format == "jsonl":
            return Response("".join(r.model_dump_json() + "\n" for r in page), media_type="application/x-ndjson")
        body = RecordPage(run_id=run_id, total=queries.record_count(store, run_id), offset=offset, limit=limit,
                          records=page)
        return Response(body.model_dump_json(), media_type=JSON)

    # -- schedules and alerts -----------------------------------------------------------------
    @api.post("/schedules", status_code=201, response_model=Schedule, tags=["schedules"])
    async def create_schedule(spec: ScheduleSpec) -> Schedule:
        """Persist a cron schedule; its runs start at each fire and are compared for drift."""
        try:
            await rt.prepare(spec.run)
        except SpecRejected as e:
            raise SpecRejected(("body", "run", *e.loc[1:]), e.message) from None
        return add_schedule(store, spec, rt.clock())

    @api.get("/schedules", response_model=ScheduleList, tags=["schedules"])
    async def schedules() -> ScheduleList:
        return ScheduleList(schedules=list_schedules(store))

    @api.get("/schedules/{schedule_id}", response_model=Schedule, tags=["schedules"], responses={404: {}})
    async def schedule(schedule_id: str) -> Schedule | JSONResponse:
        try:
            return get_schedule(store, schedule_id)
        except KeyError:
            return _not_found(f"no schedule {schedule_id!r}")

    @api.delete("/schedules/{schedule_id}", status_code=204, tags=["schedules"], responses={404: {}})
    async def delete_schedule(schedule_id: str) -> Response:
        """Remove a schedule (its runs and alerts stay)."""
        if not remove_schedule(store, schedule_id):
            return _not_found(f"no schedule {schedule_id!r}")
        return Response(status_code=204)

    @api.post("/schedules/{schedule_id}/run", status_code=202, response_model=Submitted, tags=["schedules"],
              responses={404: {}})
    async def run_schedule_now(schedule_id: str) -> Submitted | JSONResponse:
        """Fire a schedule now, out of turn (its regular fire times stay)."""
        try:
            fire = rt.fire_now(schedule_id)
        except KeyError:
            return _not_found(f"no schedule {schedule_id!r}")
        info = store.get_run(fire.run_id)
        return Submitted(run_id=info.run_id, status=info.status)

    @api.get("/alerts", response_model=AlertPage, tags=["schedules"])
    async def alerts(schedule_id: str | None = None, run_id: str | None = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                     offset: Annotated[int, Query(ge=0)] = 0) -> AlertPage:
        """Drift alerts, newest first."""
        total, page = list_alerts(store, schedule_id=schedule_id, run_id=run_id, limit=limit, offset=offset)
        return AlertPage(total=total, offset=offset, limit=limit, alerts=page)

    app.include_router(api)

    # -- operations -----------------------------------------------------------------------------
    @app.get("/healthz", response_model=Health, tags=["operations"])
    async def healthz() -> Health:
        """Liveness (no token needed)."""
        return Health(status="ok" if rt.accepting else "stopping", version=__version__, queue=rt.queue_depth(),
                      running=len(rt.active))

    @app.get("/metrics", response_class=PlainTextResponse, tags=["operations"])
    async def prometheus_metrics() -> Response:
        """Prometheus text format: runs by status, calls and errors by provider, queue depth."""
        fams = [prometheus.Family("probe_runs", "Runs in the database by status.", "gauge"),
                prometheus.Family("probe_queue_depth", "Runs waiting for a worker in this process.", "gauge"),
                prometheus.Family("probe_runs_active", "Runs executing in this process.", "gauge"),
                prometheus.Family("probe_provider_calls_total", "Provider call attempts made by this process.",
                                  "counter"),
                prometheus.Family("probe_provider_errors_total", "Failed provider call attempts by kind.",
                                  "counter"),
                prometheus.Family("probe_schedules", "Schedules in the database.", "gauge"),
                prometheus.Family("probe_alerts", "Drift alerts in the database.", "gauge")]
        for status, n in sorted(queries.runs_by_status(store).items()):
            fams[0].add(n, status=status)
        fams[1].add(rt.queue_depth())
        fams[2].add(len(rt.active))
        for provider, n in sorted(rt.counters.calls.items()):
            fams[3].add(n, provider=provider)
        for (provider, kind), n in sorted(rt.counters.errors.items()):
            fams[4].add(n, provider=provider, kind=kind)
        fams[5].add(queries.schedule_count(store))
        fams[6].add(queries.alert_count(store))
        return Response(prometheus.render(fams), media_type=prometheus.CONTENT_TYPE)

    @app.get("/", response_class=HTMLResponse, tags=["operations"])
    async def index() -> HTMLResponse:
        """A page listing recent runs, schedules and alerts, linking to the reports."""
        recent = store.list_runs(limit=config.recent_runs)
        _, recent_alerts = list_alerts(store, limit=50)
        html = _templates.get_template("index.html.jinja").render(
            version=__version__, db=str(store.path), queue=rt.queue_depth(), running=len(rt.active), runs=recent,
            counts={r.run_id: queries.record_count(store, r.run_id) for r in recent},
            schedules=list_schedules(store), alerts=recent_alerts)
        return HTMLResponse(html)

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    async def login_form() -> HTMLResponse:
        return HTMLResponse(_LOGIN.format(note=""))

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        """Browser access: a correct token sets an HttpOnly cookie that stands in for the header."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        given = (form.get("token") or [""])[0]
        if token is None or not token_matches(given, token):
            return HTMLResponse(_LOGIN.format(note="<p>Wrong token.</p>"), status_code=401)
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict")
        return resp

    return app


_LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>probe: log in</title></head>
<body style="font: 14px system-ui, sans-serif; margin: 3rem auto; max-width: 28rem">
<h1>probe service</h1>{note}
<form method="post" action="/login"><label>API token <input type="password" name="token" autofocus></label>
<button type="submit">Log in</button></form></body></html>"""
