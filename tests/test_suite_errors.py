"""Bad suite files fail with ``path:line: field: what is wrong`` and load nothing half-way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from probe.suite_io import SuiteError, load_suite, resolve_suite

ROOT = Path(__file__).resolve().parent.parent
META = 'name = "broken"\nversion = "1"\ndescription = "a test suite"\n'
GOOD_MC = {"id": "q1", "kind": "mc", "text": "2 + 2?", "choices": ["3", "4"], "answer": 1}
GOOD_SHORT = {"id": "q2", "kind": "short", "text": "Capital of France?", "aliases": ["Paris"]}


def write_suite(root: Path, lines: list[dict[str, object] | str] | bytes, meta: str = META) -> Path:
    d = root / "broken"
    d.mkdir()
    (d / "suite.toml").write_text(meta, encoding="utf-8")
    if isinstance(lines, bytes):
        data = lines
    else:
        data = "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines).encode()
    (d / "questions.jsonl").write_bytes(data)
    return d


def problems_of(d: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(d)  # raises: nothing is returned, not even the good questions
    return info.value.problems


def assert_reported(problems: list[str], path: Path, line: int, field: str, words: str) -> None:
    prefix = f"{path}:{line}: {field}: "
    hits = [p for p in problems if p.startswith(prefix)]
    assert hits, f"no problem starting with {prefix!r} in {problems}"
    assert words in hits[0], hits[0]


BAD_QUESTIONS = {
    "duplicate id": ([GOOD_MC, GOOD_SHORT, {**GOOD_SHORT, "text": "again?"}], 3, "id", "duplicate id 'q2'"),
    "answer out of range": ([GOOD_SHORT, {**GOOD_MC, "answer": 2}], 2, "answer", "out of range"),
    "negative answer": ([{**GOOD_MC, "answer": -1}], 1, "answer", "out of range"),
    "one choice": ([GOOD_SHORT, {**GOOD_MC, "choices": ["4"], "answer": 0}], 2, "choices", "at least two"),
    "empty aliases": ([GOOD_MC, {**GOOD_SHORT, "aliases": []}], 2, "aliases", "at least one"),
    "blank alias": ([GOOD_MC, {**GOOD_SHORT, "aliases": ["Paris", " "]}], 2, "aliases", "empty"),
    "unknown kind": ([GOOD_MC, {**GOOD_SHORT, "kind": "essay"}], 2, "kind", "'mc' or 'short'"),
    "duplicate choices": ([{**GOOD_MC, "choices": ["4", "4"]}], 1, "choices", "same text"),
    "unknown field": ([{**GOOD_MC, "answr": 1}], 1, "answr", "Extra inputs"),
    "missing text": ([GOOD_MC, {"id": "q9", "kind": "mc", "choices": ["a", "b"], "answer": 0}], 2, "text",
                     "Field required"),
    "not an object": ([GOOD_MC, "[1, 2]"], 2, "(line)", "expected a JSON object"),
    "broken line": (["{oops", GOOD_MC], 1, "(line)", "invalid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_QUESTIONS))
def test_bad_question_names_file_line_and_field(tmp_path: Path, case: str) -> None:
    lines, line, field, words = BAD_QUESTIONS[case]
    d = write_suite(tmp_path, lines)
    assert_reported(problems_of(d), d / "questions.jsonl", line, field, words)


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    data = (json.dumps(GOOD_MC) + "\n" + json.dumps(GOOD_SHORT) + "\n").encode()
    data += b'{"id": "q3", "kind": "short", "text": "caf\xe9?", "aliases": ["x"]}\n'  # Latin-1 é
    d = write_suite(tmp_path, data)
    assert_reported(problems_of(d), d / "questions.jsonl", 3, "(encoding)", "not valid UTF-8")


def test_truncated_last_line_is_named_as_such(tmp_path: Path) -> None:
    full = json.dumps(GOOD_MC) + "\n" + json.dumps(GOOD_SHORT) + "\n"
    d = write_suite(tmp_path, (full + '{"id": "q3", "kind": "mc", "te').encode())
    assert_reported(problems_of(d), d / "questions.jsonl", 3, "(line)", "truncated last line")


def test_a_missing_final_newline_alone_is_fine(tmp_path: Path) -> None:
    d = write_suite(tmp_path, (json.dumps(GOOD_MC) + "\n" + json.dumps(GOOD_SHORT)).encode())
    assert [q.id for q in load_suite(d).questions] == ["q1", "q2"]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    lines: list[dict[str, object] | str] = [GOOD_MC, {**GOOD_MC, "answer": 7}, {**GOOD_SHORT, "aliases": []},
                                            GOOD_SHORT, {**GOOD_SHORT, "kind": "essay", "id": "q5"}]
    d = write_suite(tmp_path, lines)
    problems = problems_of(d)
    q = d / "questions.jsonl"
    assert [p.split(": ")[0] for p in problems] == [f"{q}:2", f"{q}:3", f"{q}:5"]


def test_empty_file_has_no_questions(tmp_path: Path) -> None:
    d = write_suite(tmp_path, b"")
    assert_reported(problems_of(d), d / "questions.jsonl", 1, "(file)", "no questions")


BAD_TOML = {
    "syntax error": (META + "license = \n", 4, "(toml)", "Invalid value"),
    "missing name": ('version = "1"\n', 1, "name", "Field required"),
    "bad name": (META.replace('"broken"', '"Broken Suite"'), 1, "name", "pattern"),
    "unknown key": (META + 'licence = "MIT"\n', 4, "licence", "Extra inputs"),
    "bad variant": (META + '\n[[variants]]\nid = "plain"\n\n[[variants]]\nid = "Bad Id"\n', 8,
                    "variants[1].id", "pattern"),
    "unknown template": (META + '\n[[variants]]\nid = "x"\ntemplates = { answer_mcq = "{question}" }\n', 5,
                         "variants[0].templates", "unknown template"),
    "duplicate variants": (META + '\n[[variants]]\nid = "a"\n\n[[variants]]\nid = "a"\n', 5, "variants",
                           "duplicate variant id"),
    "variants not tables": (META + 'variants = "plain"\n', 4, "variants", "array of tables"),
}


@pytest.mark.parametrize("case", sorted(BAD_TOML))
def test_bad_suite_toml_names_file_line_and_field(tmp_path: Path, case: str) -> None:
    meta, line, field, words = BAD_TOML[case]
    d = write_suite(tmp_path, [GOOD_MC, GOOD_SHORT], meta=meta)
    assert_reported(problems_of(d), d / "suite.toml", line, field, words)


def test_missing_files_are_named(tmp_path: Path) -> None:
    d = write_suite(tmp_path, [GOOD_MC])
    (d / "questions.jsonl").unlink()
    problems = problems_of(d)
    assert problems[0].startswith(f"{d / 'questions.jsonl'}: (file): missing")
    with pytest.raises(SuiteError, match="no such suite"):
        resolve_suite("no-such-suite-anywhere")


def run_probe(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "probe", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_cli_validate_exits_1_and_prints_every_problem(tmp_path: Path) -> None:
    d = write_suite(tmp_path, [GOOD_MC, {**GOOD_MC, "answer": 5}, {**GOOD_SHORT, "aliases": []}])
    out = run_probe("suites", "validate", str(d))
    assert out.returncode == 1, out.stderr
    lines = out.stderr.splitlines()
    q = d / "questions.jsonl"
    assert any(ln.startswith(f"{q}:2: answer: ") for ln in lines), out.stderr
    assert any(ln.startswith(f"{q}:3: aliases: ") for ln in lines), out.stderr
    assert "Traceback" not in out.stderr


def test_cli_validate_accepts_a_good_suite(tmp_path: Path) -> None:
    d = write_suite(tmp_path, [GOOD_MC, GOOD_SHORT])
    out = run_probe("suites", "validate", str(d))
    assert out.returncode == 0, out.stderr
    assert "ok (2 questions, 3 variants, s1:" in out.stdout


def test_cli_show_unknown_suite_exits_2_without_traceback(tmp_path: Path) -> None:
    out = run_probe("suites", "show", "nosuch", cwd=tmp_path)
    assert out.returncode == 2
    assert "nosuch" in out.stderr and "no such suite" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout
