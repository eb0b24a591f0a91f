"""``probe suites``: list, show, validate and import question suites."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from probe.cli._common import console, print_json
from probe.errors import UsageError
from probe.importers import FieldMap, ImportFormat, import_suite
from probe.suite_io import SuiteError, available_suites, load_suite, resolve_suite

app = typer.Typer(help="List, show, validate and import question suites.", no_args_is_help=True)


@app.command("list")
def list_suites(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the suites on the search path ($PROBE_SUITES_PATH, ./suites, bundled)."""
    rows: list[dict[str, Any]] = []
    for name, path in available_suites().items():
        try:
            s = load_suite(path)
            kinds = Counter(q.kind for q in s.questions)
            rows.append({"name": name, "version": s.version, "questions": len(s.questions),
                         "mc": kinds.get("mc", 0), "short": kinds.get("short", 0),
                         "variants": [v.id for v in s.variants], "path": str(path),
                         "description": s.description, "error": None})
        except SuiteError as e:
            rows.append({"name": name, "path": str(path), "error": str(e).splitlines()[0]})
    if json_out:
        print_json(rows)
        return
    table = Table("suite", "version", "questions", "mc", "short", "variants", "description")
    for r in rows:
        if r["error"]:
            table.add_row(r["name"], "-", "-", "-", "-", "-", f"[red]invalid: {r['error']}[/red]")
        else:
            table.add_row(r["name"], r["version"], str(r["questions"]), str(r["mc"]), str(r["short"]),
                          ", ".join(r["variants"]), r["description"])
    console.print(table)


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Suite name or directory."),
    json_out: bool = typer.Option(False, "--json", help="Print the whole suite as JSON."),
    limit: int = typer.Option(5, "--limit", min=0, help="Questions to show in the table."),
) -> None:
    """Show a suite's metadata, variants and first questions."""
    s = resolve_suite(name)
    if json_out:
        data = s.model_dump(mode="json")
        data["fingerprint"] = s.fingerprint
        print_json(data)
        return
    console.print(f"[bold]{s.name}[/bold] v{s.version} — {s.description}")
    console.print(f"fingerprint {s.fingerprint}; {len(s.questions)} questions; license: {s.license}")
    console.print(f"source: {s.source}")
    for v in s.variants:
        console.print(f"  variant [bold]{v.id}[/bold]: {v.description}")
    table = Table("id", "kind", "question", "answer")
    for q in s.questions[:limit]:
        table.add_row(q.id, q.kind, q.text, q.correct_text)
    console.print(table)


@app.command("validate")
def validate(paths: list[Path] = typer.Argument(..., help="Suite directories to check.")) -> None:
    """Validate suite directories; prints every problem as path:line: field: message."""
    bad = 0
    for path in paths:
        try:
            s = load_suite(path)
        except SuiteError as e:
            bad += 1
            for p in e.problems:
                typer.echo(p, err=True)
            continue
        typer.echo(f"{path}: ok ({len(s.questions)} questions, {len(s.variants)} variants, {s.fingerprint})")
    if bad:
        raise typer.Exit(1)


@app.command("import")
def import_(
    src: Path = typer.Argument(..., help="Source file (for mmlu-csv also a directory of CSV files)."),
    fmt: ImportFormat = typer.Option(..., "--format", "-f", help="Source format."),
    out: Path = typer.Option(..., "--out", "-o", help="Suite directory to write, e.g. suites/NAME."),
    name: str | None = typer.Option(None, "--name", help="Suite name (default: the output directory's name)."),
    mapping: str | None = typer.Option(
        None, "--map", help="jsonl only: field=source_field pairs, e.g. question=q,choices=opts,answer=ans,aliases=alts."
    ),
    max_choices: int | None = typer.Option(
        None, "--max-choices", help="truthfulqa-mc1-json: keep the correct option and the first others up to N."
    ),
    description: str | None = typer.Option(None, "--description", help="Suite description."),
    license_: str = typer.Option("", "--license", help="License of the imported content."),
    force: bool = typer.Option(False, "--force", help="Replace an existing suite directory."),
) -> None:
    """Import MMLU CSV, TriviaQA JSON, TruthfulQA MC1 JSON or mapped JSONL into a suite directory."""
    if mapping and fmt is not ImportFormat.JSONL:
        raise UsageError(f"--map: only the jsonl format takes a field mapping, not {fmt.value}")
    field_map = FieldMap.parse(mapping)
    path, count = import_suite(fmt, src, out, name=name, mapping=field_map, max_choices=max_choices,
                               force=force, description=description, license=license_)
    typer.echo(f"wrote {path} ({count} questions); check it with: probe suites validate {path}")
