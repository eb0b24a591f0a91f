"""The generated suites are reproduced byte for byte by their generator scripts."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SUITES = Path(__file__).resolve().parent.parent / "suites"
GENERATED = ("arithmetic", "calendar", "capitals", "elements", "demo")  # demo last: it reads the others


def load_generator(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"generate_{name}", SUITES / name / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", GENERATED)
def test_build_reproduces_the_committed_file(name: str) -> None:
    text = load_generator(name).build()
    assert text.encode("utf-8") == (SUITES / name / "questions.jsonl").read_bytes()


def test_scripts_regenerate_every_file_in_a_fresh_process(tmp_path: Path) -> None:
    copy = tmp_path / "suites"
    shutil.copytree(SUITES, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name in GENERATED:
        (copy / name / "questions.jsonl").unlink()
    env = dict(os.environ, PYTHONHASHSEED="12345")  # set iteration order must not matter
    for name in GENERATED:
        out = subprocess.run([sys.executable, str(copy / name / "generate.py")], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert (copy / name / "questions.jsonl").read_bytes() == (SUITES / name / "questions.jsonl").read_bytes()


def test_arithmetic_has_the_size_the_runner_tests_need() -> None:
    lines = load_generator("arithmetic").build().splitlines()
    assert len(lines) >= 2000


def test_capitals_table_refuses_a_decoy_that_is_a_capital(tmp_path: Path) -> None:
    gen = load_generator("capitals")
    table = tmp_path / "countries.tsv"
    table.write_text("France\tEurope\tParis\tLyon\tyes\nGermany\tEurope\tBerlin\tParis\tyes\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"decoy\(s\) \['Paris'\] of Germany are a capital"):
        gen.read_table(table)


def test_elements_table_must_have_no_gaps(tmp_path: Path) -> None:
    gen = load_generator("elements")
    table = tmp_path / "elements.tsv"
    table.write_text("1\tH\tHydrogen\n3\tLi\tLithium\n", encoding="utf-8")
    with pytest.raises(ValueError, match="without gaps"):
        gen.read_table(table)
