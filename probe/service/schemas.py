"""Bodies the HTTP API returns (requests are RunSpec and ScheduleSpec themselves)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from probe.record import Record
from probe.service.alerts import Alert
from probe.service.scheduler import Schedule
from probe.storage import RunInfo, RunStatus


class Submitted(BaseModel):
    """A run accepted for execution."""

    run_id: str = Field(description="Id of the new run.")
    status: RunStatus = Field(description="Its state now (queued).")


class RunProgress(BaseModel):
    """How far a run is."""

    planned_records: int = Field(description="Records the plan holds.")
    records: int = Field(description="Records written so far (any status).")
    fraction: float = Field(description="records / planned_records (0 when nothing is planned).")
    live: bool = Field(description="True while this service process is executing the run.")
    units_total: int | None = Field(default=None, description="Items left when this execution started (live).")
    units_done: int | None = Field(default=None, description="Of those, items finished (live).")
    calls: int | None = Field(default=None, description="Requests sent by this execution (live).")
    cache_hits: int | None = Field(default=None, description="Responses served from the cache (live).")
    errors: int | None = Field(default=None, description="Calls that failed after retries (live).")


class RunView(RunInfo):
    """A run's manifest, state, progress and record counts."""

    progress: RunProgress = Field(description="How far it is.")
    counts: dict[str, int] = Field(description="Records by status.")
    origin: Literal["api", "schedule"] | None = Field(
        default=None, description="Who started it: the API, a schedule, or null (a plain `probe run`).")
    schedule_id: str | None = Field(default=None, description="Schedule that started it, if any.")


class RunPage(BaseModel):
    """One page of runs, newest first."""

    total: int = Field(description="Runs matching the filters.")
    offset: int = Field(description="Index of the first run of this page.")
    limit: int = Field(description="Page size asked for.")
    runs: list[RunInfo] = Field(description="The runs.")


class RecordPage(BaseModel):
    """One page of a run's records, in the order they were written."""

    run_id: str = Field(description="Run id.")
    total: int = Field(description="Records of the run.")
    offset: int = Field(description="Index of the first record of this page.")
    limit: int = Field(description="Page size asked for.")
    records: list[Record] = Field(description="The records.")


class ScheduleList(BaseModel):
    """Every schedule."""

    schedules: list[Schedule] = Field(description="Schedules, oldest first.")


class AlertPage(BaseModel):
    """One page of drift alerts, newest first."""

    total: int = Field(description="Alerts matching the filters.")
    offset: int = Field(description="Index of the first alert of this page.")
    limit: int = Field(description="Page size asked for.")
    alerts: list[Alert] = Field(description="The alerts.")


class Health(BaseModel):
    """Liveness."""

    status: Literal["ok", "stopping"] = Field(description="ok, or stopping during a graceful shutdown.")
    version: str = Field(description="probe version.")
    queue: int = Field(description="Runs waiting for a worker.")
    running: int = Field(description="Runs executing in this process.")
