"""Reading suites from disk: a directory holding ``suite.toml`` and ``questions.jsonl``.

Every problem is reported as ``path:line: field: what is wrong`` and nothing is loaded
half-way: a suite with any error raises ``SuiteError`` listing all of them.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from probe.suite import PromptVariant, Question, Suite

SUITE_FILE = "suite.toml"
QUESTIONS_FILE = "questions.jsonl"
MAX_REPORTED = 20


class SuiteError(ValueError):
    """A suite that cannot be loaded; ``problems`` holds one ``path:line: field: msg`` each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_REPORTED]
        more = len(problems) - len(shown)
        text = "\n".join(shown) + (f"\n… and {more} more problem(s)" if more > 0 else "")
        super().__init__(text)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(record)"


def _validation_problems(prefix: str, err: ValidationError) -> list[str]:
    problems = []
    for e in err.errors():
        msg = str(e["msg"]).removeprefix("Value error, ")
        loc = _loc(tuple(e["loc"]))
        # model-level checks say which field they are about at the start of the message
        if loc == "(record)" and ": " in msg:
            loc, msg = msg.split(": ", 1)
        problems.append(f"{prefix}: {loc}: {msg}")
    return problems


def _decode(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SuiteError([f"{path}:{line}: (encoding): not valid UTF-8 (byte {e.start})"]) from None


def read_questions(path: Path) -> tuple[list[Question], list[str]]:
    """Parse a questions JSONL file; returns the questions and the problems found."""
    text = _decode(path)
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    questions: list[Question] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj: Any = json.loads(line)
        except json.JSONDecodeError as e:
            last = number == len(lines)
            what = "truncated last line" if last and not ends_with_newline else "invalid JSON"
            problems.append(f"{where}: (line): {what} ({e.msg}; column {e.colno})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: (line): expected a JSON object, got {type(obj).__name__}")
            continue
        try:
            q = Question.model_validate(obj)
        except ValidationError as e:
            problems.extend(_validation_problems(where, e))
            continue
        if q.id in seen:
            problems.append(f"{where}: id: duplicate id {q.id!r} (first on line {seen[q.id]})")
            continue
        seen[q.id] = number
        questions.append(q)
    if not questions and not problems:
        problems.append(f"{path}:1: (file): no questions")
    return questions, problems


def _toml_line(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith((f"{key} ", f"{key}=", f"[{key}]", f"[[{key}]]")):
            return number
    return None


def _variant_line(text: str, index: int) -> int:
    """Line of the ``index``-th ``[[variants]]`` table (1 if not found)."""
    headers = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip() == "[[variants]]"]
    return headers[index] if index < len(headers) else (_toml_line(text, "variants") or 1)


def load_suite(path: Path) -> Suite:
    """Load and validate a suite directory (or its ``suite.toml``)."""
    directory = path.parent if path.name == SUITE_FILE else path
    meta_path = directory / SUITE_FILE
    if not directory.is_dir():
        raise SuiteError([f"{directory}: (path): not a suite directory"])
    if not meta_path.is_file():
        raise SuiteError([f"{meta_path}: (file): missing; a suite directory needs {SUITE_FILE}"])
    meta_text = _decode(meta_path)
    try:
        meta = tomllib.loads(meta_text)
    except tomllib.TOMLDecodeError as e:
        at = re.search(r"\(at line (\d+), column \d+\)", str(e))
        raise SuiteError([f"{meta_path}:{at.group(1) if at else 1}: (toml): {e}"]) from None
    problems: list[str] = []
    variants: list[PromptVariant] = []
    raw_variants = meta.pop("variants", [])
    if not isinstance(raw_variants, list):
        line = _toml_line(meta_text, "variants") or 1
        problems.append(f"{meta_path}:{line}: variants: expected an array of tables ([[variants]])")
        raw_variants = []
    for i, raw in enumerate(raw_variants):
        try:
            variants.append(PromptVariant.model_validate(raw))
        except ValidationError as e:
            line = _variant_line(meta_text, i)
            for p in _validation_problems(f"{meta_path}:{line}", e):
                where, rest = p.split(": ", 1)
                problems.append(f"{where}: variants[{i}].{rest}")
    q_path = directory / QUESTIONS_FILE
    if not q_path.is_file():
        problems.append(f"{q_path}: (file): missing; a suite directory needs {QUESTIONS_FILE}")
        questions: list[Question] = []
    else:
        questions, q_problems = read_questions(q_path)
        problems.extend(q_problems)
    if problems:
        raise SuiteError(problems)
    fields: dict[str, Any] = dict(meta, questions=questions)
    if variants:
        fields["variants"] = variants
    try:
        return Suite.model_validate(fields)
    except ValidationError as e:
        out = []
        for p in _validation_problems(str(meta_path), e):
            field = p.split(": ")[1].split(".")[0].split("[")[0]
            line = _toml_line(meta_text, field) or 1  # a missing key is reported on line 1
            out.append(p.replace(f"{meta_path}:", f"{meta_path}:{line}:", 1))
        raise SuiteError(out) from None


def suite_dirs() -> list[Path]:
    """Where suites are looked up by name: $PROBE_SUITES_PATH, ./suites, the bundled suites."""
    dirs: list[Path] = []
    env = os.environ.get("PROBE_SUITES_PATH")
    if env:
        dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    dirs.append(Path.cwd() / "suites")
    dirs.append(Path(__file__).resolve().parent.parent / "suites")
    unique: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in [u.resolve() for u in unique]:
            unique.append(d)
    return unique


def available_suites() -> dict[str, Path]:
    """Suite name → directory, first match on the search path wins."""
    found: dict[str, Path] = {}
    for d in suite_dirs():
        for child in sorted(d.iterdir()):
            if (child / SUITE_FILE).is_file() and child.name not in found:
                found[child.name] = child
    return found


def resolve_suite(name_or_path: str) -> Suite:
    """Load a suite by name (search path) or by directory path.

    A bare name (no path separator) is looked up on the search path first, so a stray folder of
    the same name in the working directory does not shadow a bundled suite; a path is a path.
    """
    candidate = Path(name_or_path)
    bare = os.sep not in name_or_path and "/" not in name_or_path and not name_or_path.startswith(".")
    known = available_suites() if bare else {}
    if name_or_path in known:
        return load_suite(known[name_or_path])
    if candidate.exists():
        return load_suite(candidate)
    known = known or available_suites()
    names = ", ".join(sorted(known)) or "none"
    raise SuiteError([f"{name_or_path}: (suite): no such suite or directory (known suites: {names})"])
