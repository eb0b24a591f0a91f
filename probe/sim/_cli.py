"""``probe sim``: run the offline simulator and state its ground truth.

Registered as ``probe sim`` (probe/cli/sim.py) and runnable alone as ``python -m probe.sim`` without
importing the rest of the CLI (so a simulator subprocess starts fast)."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from probe.errors import UsageError
from probe.sim._faults import FaultSpecError
from probe.sim._knowledge import Knowledge
from probe.sim._personas import PERSONAS, Persona
from probe.sim._server import DEFAULT_PORT, build_app, serve
from probe.sim._truth import suite_truth, suite_variant
from probe.suite import PromptVariant
from probe.suite_io import SuiteError, resolve_suite

PLAIN_FORM = "plain-form"

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False))

app = typer.Typer(help="The offline simulator: an OpenAI/Anthropic-compatible server with known calibration.",
                  no_args_is_help=True)


def _persona(name: str) -> Persona:
    p = PERSONAS.get(name.removeprefix("sim-").removeprefix("sim/"))
    if p is None:
        raise UsageError(f"--persona: unknown persona {name!r} (known: {', '.join(PERSONAS)})")
    return p


@app.command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(DEFAULT_PORT, "--port", min=0, max=65535, help="Port (0: any free port)."),
    latency_ms: str | None = typer.Option(None, "--latency-ms",
                                          help="Added latency: MS (fixed) or lognormal:MEDIAN_MS:SIGMA."),
    fault: str | None = typer.Option(None, "--fault", help="Fault shares, e.g. 429=0.2,500=0.05,malformed=0.02."),
    suite: list[str] = typer.Option([], "--suite", help="Extra suite (name or directory) it should know."),
    seed: int = typer.Option(0, "--seed", help="Seed of the latent item model."),
    fault_seed: int = typer.Option(0, "--fault-seed", help="Seed of the fault and latency draws."),
    retry_after: float = typer.Option(1.0, "--retry-after", min=0, help="retry-after of 429s, seconds."),
    hang_s: float = typer.Option(600.0, "--hang-s", min=0.001, help="How long a 'hang' lasts at most."),
    no_bundled: bool = typer.Option(False, "--no-bundled", help="Know only the --suite suites."),
) -> None:
    """Serve sim-<persona> models over HTTP until interrupted (prints its base URL first)."""
    try:
        sim = build_app(suites=suite, bundled=not no_bundled, seed=seed, fault=fault, fault_seed=fault_seed,
                        latency_ms=latency_ms, retry_after=retry_after, hang_s=hang_s)
    except FaultSpecError as e:
        raise UsageError(f"--fault/--latency-ms: {e}") from None

    def ready(url: str) -> None:
        print(f"probe sim listening on {url}", flush=True)
        err_console.print(f"models: {', '.join(sim.model_ids)}; {sim.knowledge.size} known questions from "
                          f"{', '.join(sim.knowledge.suite_names) or 'no suites'}; stats at "
                          f"{url.removesuffix('/v1')}/sim/stats")

    try:
        serve(sim, host=host, port=port, ready=ready)
    except OSError as e:
        raise UsageError(f"--host/--port: cannot listen on {host}:{port}: {e.strerror or e}") from None


@app.command("truth")
def truth_cmd(
    persona: str = typer.Option(..., "--persona", help=f"One of: {', '.join(PERSONAS)}."),
    suite: str = typer.Option(..., "--suite", help="Suite name or directory."),
    variant: list[str] = typer.Option([], "--variant",
                                      help="Variant id of the suite (repeatable; default: every variant). "
                                           "'plain-form' is the form with no system prompt in the suite's order."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    seed: int = typer.Option(0, "--seed", help="Seed of the latent item model (as served)."),
    samples: int = typer.Option(5, "--samples", min=1, max=50, help="Consistency: samples per item (K)."),
    temperature: float = typer.Option(1.0, "--temperature", min=0.0, max=2.0, help="Consistency: temperature."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N items (of each variant)."),
) -> None:
    """For every item, variant and source: what the persona reports and the true probability of being right.

    The truth depends on the prompt's variant form (its system prompt and option order), so it is
    stated per variant of the suite. The table shows p (the true probability that its greedy answer
    is right in that form, the truth behind every source's report), whether that answer is right,
    and what token, ptrue, verbal (numeric and hedge) and consistency (expected share at
    --samples/--temperature) report; --json has everything."""
    p = _persona(persona)
    s = resolve_suite(suite)
    forms: list[PromptVariant | None] = []
    for vid in variant or [v.id for v in s.variants]:
        try:
            forms.append(suite_variant(s, vid))
        except KeyError as e:
            if vid != PLAIN_FORM:
                raise UsageError(f"--variant: {e.args[0]}; or {PLAIN_FORM}") from None
            forms.append(None)
    kb = Knowledge([s], seed=seed)
    per_form = [(f, suite_truth(s, p, samples=samples, temperature=temperature, knowledge=kb,
                                variant=f)[:limit]) for f in forms]
    if json_out:
        print_json({"persona": p.name, "suite": s.name, "suite_fingerprint": s.fingerprint, "seed": seed,
                    "samples": samples, "temperature": temperature,
                    "variants": [_form_json(f) for f in forms],
                    "items": [r.model_dump(mode="json") for _, rows in per_form for r in rows]})
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("variant", "item", "p", "right", "token", "ptrue", "verbal", "hedge", "cons."):
        table.add_column(name, no_wrap=name != "hedge")

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for form, rows in per_form:
        for r in rows:
            table.add_row(_form_name(form), r.item_id, fmt(r.latent_p), "yes" if r.right else "no",
                          fmt(r.token.confidence), fmt(r.ptrue.confidence), r.verbal_numeric.text or "-",
                          r.verbal_linguistic.text or "-", fmt(r.consistency.confidence))
    console.print(table)
    for form, rows in per_form:
        n = len(rows)
        summary: dict[str, Any] = {
            "variant": _form_name(form),
            "items": n,
            "mean p(right)": sum(r.latent_p for r in rows) / n,
            "right (greedy)": sum(r.right for r in rows) / n,
        }
        for name in ("token", "ptrue", "verbal_numeric", "verbal_linguistic", "consistency"):
            vals = [getattr(r, name).confidence for r in rows if getattr(r, name).confidence is not None]
            summary[f"mean {name}"] = sum(vals) / len(vals) if vals else None
        console.print("  ".join(f"{k}: {fmt(v) if isinstance(v, float) else v if v is not None else '-'}"
                                for k, v in summary.items()))


def _form_name(form: PromptVariant | None) -> str:
    return PLAIN_FORM if form is None else form.id


def _form_json(form: PromptVariant | None) -> dict[str, Any]:
    """What of a variant the simulator sees: its system prompt and its option shuffle."""
    if form is None:
        return {"id": PLAIN_FORM, "system": None, "shuffle_seed": None}
    return {"id": form.id, "system": form.system, "shuffle_seed": form.shuffle_seed}


@app.command("personas")
def personas_cmd(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the personas and how each reports its beliefs."""
    if json_out:
        print_json([p.model_dump(mode="json") | {"model": p.model_id} for p in PERSONAS.values()])
        return
    table = Table("model", "logprobs", "token γ", "P(True) γ", "verbal", "with a system prompt", "summary")
    for p in PERSONAS.values():
        table.add_row(p.model_id, "yes" if p.logprobs else "no", f"{p.token_gamma:g}", f"{p.ptrue_gamma:g}",
                      _verbal(p), _system_effect(p), p.summary)
    console.print(table)


def _verbal(p: Persona) -> str:
    if p.verbal_style == "rounder":
        return f"tens, states {p.verbal_error_share:.2g} of its error"
    return f"γ = {p.verbal_gamma:.2g}"


def _system_effect(p: Persona) -> str:
    s = p.prompted(True)
    if s.token_gamma == p.token_gamma and s.ptrue_gamma == p.ptrue_gamma and s.verbal_gamma == p.verbal_gamma \
            and s.verbal_error_share == p.verbal_error_share:
        return "reports the same way"
    parts = []
    if s.token_gamma != p.token_gamma:
        parts.append(f"token/P(True) γ = {s.token_gamma:.2g}")
    parts.append(f"verbal {_verbal(s)}")
    return "; ".join(parts)


def main() -> None:
    """``python -m probe.sim``: user mistakes exit 2 with a message, as ``probe`` does."""
    try:
        app(prog_name="python -m probe.sim")
    except (UsageError, SuiteError) as e:
        err_console.print(f"[red]error:[/red] {e}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
