"""The service's settings (``probe serve`` flags map onto them)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from probe.errors import UsageError
from probe.storage import DEFAULT_DB

TOKEN_ENV = "PROBE_API_TOKEN"


class ServiceConfig(BaseModel):
    """How the service runs."""

    model_config = ConfigDict(frozen=True)

    db: Path = Field(default=DEFAULT_DB, description="SQLite database.")
    host: str = Field(default="127.0.0.1", description="Address to listen on.")
    port: int = Field(default=8765, ge=0, le=65535, description="Port to listen on (0 = any free port).")
    workers: int = Field(default=2, ge=1, le=64, description="Runs executed at the same time.")
    token: SecretStr | None = Field(default=None, description=f"Bearer token (from {TOKEN_ENV}).")
    max_body_bytes: int = Field(default=1 << 20, ge=1024, description="Largest request body accepted (413 above).")
    tick_s: float = Field(default=5.0, gt=0, description="How often the scheduler looks for due schedules.")
    lease_ttl_s: float = Field(default=30.0, gt=0, description="Run leases expire this long after the last "
                                                               "heartbeat (then another process may adopt).")
    shutdown_grace_s: float = Field(default=10.0, ge=0, description="On shutdown, how long running runs may "
                                                                    "finish before they are interrupted.")
    allow_suite_paths: bool = Field(default=False, description="Accept suite directories in run specs, not "
                                                               "just names of known suites.")
    auto_sim: bool = Field(default=True, description="Start the built-in simulator for sim/ models when "
                                                     "SIM_BASE_URL is not set.")
    webhook_attempts: int = Field(default=4, ge=1, le=20, description="Delivery attempts per drift webhook.")
    report_cache: int = Field(default=64, ge=0, description="Finished runs' metrics/reports kept in memory.")
    warm_metrics: bool = Field(default=True, description="Compute a run's default metrics as soon as it ends.")
    recent_runs: int = Field(default=20, ge=1, le=500, description="Runs listed on the / page.")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(config: ServiceConfig) -> None:
    """Refuse to listen beyond this machine without a token."""
    if config.token is None and not is_loopback(config.host):
        raise UsageError(f"refusing to listen on {config.host} without a token: set {TOKEN_ENV} "
                         "(clients then send 'Authorization: Bearer <token>'), or use --host 127.0.0.1")
    if config.token is not None and len(config.token.get_secret_value()) < 16:
        raise UsageError(f"{TOKEN_ENV} is too short: use at least 16 characters "
                         "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
