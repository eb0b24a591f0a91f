"""``probe serve``: the HTTP API, run workers and the scheduler in one process (uvicorn)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import typer

from probe.cli._common import err_console
from probe.errors import UsageError
from probe.service.config import TOKEN_ENV, ServiceConfig, check_exposure
from probe.storage import DEFAULT_DB


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (beyond loopback only with "
                                                       f"{TOKEN_ENV} set)."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port to listen on."),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="SQLite database."),
    workers: int = typer.Option(2, "--workers", min=1, max=64, help="Runs executed at the same time."),
    tick: float = typer.Option(5.0, "--tick", min=0.05, help="Seconds between looks for due schedules."),
    grace: float = typer.Option(10.0, "--grace", min=0, help="On SIGTERM, seconds running runs may finish "
                                                           "before they are interrupted (then resumed on restart)."),
    allow_suite_paths: bool = typer.Option(False, "--allow-suite-paths",
                                           help="Accept suite directories in run specs, not just suite names."),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
) -> None:
    """Serve the HTTP API (runs, metrics, reports, schedules, drift alerts); docs at /docs."""
    if log_level not in ("debug", "info", "warning", "error"):
        raise UsageError(f"--log-level must be debug, info, warning or error, not {log_level!r}")
    token = os.environ.get(TOKEN_ENV) or None
    config = ServiceConfig(db=db, host=host, port=port, workers=workers, token=token, tick_s=tick,
                           shutdown_grace_s=grace, allow_suite_paths=allow_suite_paths)
    check_exposure(config)
    import uvicorn

    from probe.service.app import create_app

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(config)
    auth = "token required" if token else "no token (loopback only)"
    err_console.print(f"probe serve: http://{host}:{port}/ ({auth}); database {db}; {workers} worker(s)")
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=int(grace) + 5,
                proxy_headers=False, server_header=False)
