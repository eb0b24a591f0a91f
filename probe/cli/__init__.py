"""The ``probe`` command line. Each command group lives in its own module."""

from __future__ import annotations

import sys

import typer

from probe import __version__
from probe.cli._common import err_console
from probe.cli.batch import app as batch_app
from probe.cli.calibrate import app as calibrate_app
from probe.cli.compare import compare
from probe.cli.history import history
from probe.cli.plot import plot
from probe.cli.providers import app as providers_app
from probe.cli.report import report
from probe.cli.run import demo, export, run
from probe.cli.schedule import app as schedule_app
from probe.cli.serve import serve
from probe.cli.sim import app as sim_app
from probe.cli.suites import app as suites_app
from probe.completion import ConfigError
from probe.errors import Failure, UsageError
from probe.spec import ModelSpecError
from probe.suite_io import SuiteError

app = typer.Typer(
    name="probe",
    help="Measure how well LLMs' confidence matches their accuracy (calibration), through their HTTP APIs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(suites_app, name="suites")
app.add_typer(sim_app, name="sim")
app.add_typer(providers_app, name="providers")
app.command("run")(run)
app.command("export")(export)
app.command("demo")(demo)
app.command("serve")(serve)
app.add_typer(schedule_app, name="schedule")
app.command("report")(report)
app.add_typer(calibrate_app, name="calibrate")
app.add_typer(batch_app, name="batch")
app.command("compare")(compare)
app.command("history")(history)
app.command("plot")(plot)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"probe {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """probe: calibration of hosted LLMs, measured through their own APIs."""


USER_ERRORS: tuple[type[BaseException], ...] = (UsageError, SuiteError, ModelSpecError, ConfigError)


def main() -> None:
    """Console entry point: user mistakes exit 2 with a message, failures exit 1, no tracebacks."""
    try:
        app()
    except USER_ERRORS as e:
        err_console.print(f"[red]error:[/red] {e}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(2)
    except Failure as e:
        err_console.print(f"[red]failed:[/red] {e}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
