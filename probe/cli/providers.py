"""``probe providers``: list known providers; check what a model actually gives back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.table import Table

from probe.cli._common import console, print_json
from probe.errors import Failure
from probe.spec import ModelSpec
from providers import create_provider, known_providers
from providers.capabilities import CapabilityCache, CapabilityReport, probe_capabilities

app = typer.Typer(help="List providers and check a model's capabilities.", no_args_is_help=True)


@app.command("list")
def list_providers(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Known providers, the variables they read, default base URLs and static capabilities."""
    infos = known_providers()
    if json_out:
        print_json([i.model_dump(mode="json") for i in infos])
        return
    table = Table("provider", "base URL (default)", "variables", "logprobs", "top-k", "n")
    for i in infos:
        name = i.name + (f" ({', '.join(i.aliases)})" if i.aliases else "")
        key = " | ".join(i.key_variables) + ("" if i.key_required else " (optional)")
        table.add_row(name, i.default_base_url or f"[yellow]set {i.base_url_variables[0]}[/yellow]",
                      " | ".join(i.base_url_variables) + f"\n{key}", "yes" if i.logprobs else "no",
                      str(i.max_top_logprobs) if i.logprobs else "-", "yes" if i.supports_n else "no")
    console.print(table)


def _yes_no(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def _print_report(r: CapabilityReport, cached: bool) -> None:
    console.print(f"[bold]{r.model}[/bold] at {r.base_url}" + (" (cached)" if cached else ""))
    if r.error:
        console.print(f"  [red]check failed[/red] ({r.error_kind}): {r.error}")
        return
    why = f" ({r.logprob_state}: {r.logprob_reason})" if r.logprob_reason else ""
    console.print(f"  logprobs: {_yes_no(r.logprobs)}{why}")
    if r.top_k_requested:
        console.print(f"  top-k: asked {r.top_k_requested}, got {r.top_k_returned} "
                      f"(honoured: {_yes_no(r.top_k_honoured)})")
    console.print(f"  n > 1 in one call: {_yes_no(r.n_supported)}"
                  + (f" (asked {r.n_requested}, got {r.n_returned})" if r.n_requested > 1 else ""))
    console.print(f"  temperature accepted: {_yes_no(r.temperature_accepted)}")
    if r.dropped_params:
        console.print(f"  dropped parameters: {', '.join(r.dropped_params)}")
    if r.model_reported:
        console.print(f"  model reported: {r.model_reported}")
    for note in r.notes:
        console.print(f"  note: {note}")


async def _check(spec: ModelSpec, refresh: bool, cache_path: Path | None) -> tuple[CapabilityReport, bool]:
    provider = create_provider(spec)
    started = datetime.now(UTC)
    try:
        report = await probe_capabilities(provider, cache=CapabilityCache(cache_path), refresh=refresh)
        return report, report.checked_at < started
    finally:
        await provider.aclose()


@app.command("check")
def check(
    model: str = typer.Argument(..., help="provider/model, e.g. sim/calibrated (see: probe providers list)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    refresh: bool = typer.Option(False, "--refresh", help="Ignore the cached report and check again."),
    cache_path: Path | None = typer.Option(None, "--cache", help="Capability cache file (default under ~/.cache/probe)."),
) -> None:
    """Send one cheap request with logprobs and report what actually came back (cached per model)."""
    spec = ModelSpec.parse(model)
    report, cached = asyncio.run(_check(spec, refresh, cache_path))
    if json_out:
        print_json(report.model_dump(mode="json"))
    else:
        _print_report(report, cached)
    if report.error:
        raise Failure(f"could not check {spec.name}: {report.error}")
