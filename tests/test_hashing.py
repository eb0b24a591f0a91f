"""Canonical JSON and versioned hashes: same content, same fingerprint, across key orders and processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probe.hashing import canonical_json, versioned_hash
from probe.suite import Question
from probe.suite_io import load_suite

VALUE = {"model": "openai/gpt-4o", "params": {"temperature": 0.0, "top_logprobs": 5, "n": 1},
         "messages": [{"role": "user", "content": "Qu'est-ce que c'est ? — é"}], "sample": 3}


def reordered(value: object) -> object:
    if isinstance(value, dict):
        return {k: reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(v) for v in value]
    return value


def test_canonical_json_form() -> None:
    assert canonical_json({"b": 1, "a": [1, (2, 3)], "é": "ü", "n": None}) == '{"a":[1,[2,3]],"b":1,"n":null,"é":"ü"}'
    assert versioned_hash({"b": 1, "a": 2}) == "c1:" + hashlib.sha256(b'{"a":2,"b":1}').hexdigest()
    assert versioned_hash({"a": 1}, tag="x9").startswith("x9:")


def test_key_order_does_not_matter() -> None:
    assert list(reordered(VALUE)) != list(VALUE)  # type: ignore[call-overload]
    assert canonical_json(reordered(VALUE)) == canonical_json(VALUE)
    assert versioned_hash(reordered(VALUE)) == versioned_hash(VALUE)


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v.update(sample=4),
        lambda v: v["params"].update(temperature=0.7),
        lambda v: v["messages"][0].update(content="Qu'est-ce que c'est ? — e"),
        lambda v: v["messages"].append({"role": "assistant", "content": ""}),
        lambda v: v.update(extra=None),
        lambda v: v.update(sample="3"),  # the string "3" is not the number 3
    ],
)
def test_different_content_gives_a_different_hash(change: object) -> None:
    other = json.loads(json.dumps(VALUE))
    change(other)  # type: ignore[operator]
    assert versioned_hash(other) != versioned_hash(VALUE)


def test_pydantic_models_hash_as_their_json() -> None:
    q = Question(id="q1", kind="mc", text="2+2?", choices=("3", "4"), answer=1)
    assert versioned_hash(q) == versioned_hash(q.model_dump(mode="json"))


def test_non_finite_numbers_are_refused() -> None:
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="non-finite"):
            canonical_json({"x": [bad]})


def test_same_fingerprint_in_another_process(tmp_path: Path) -> None:
    code = ("import json, sys; from probe.hashing import versioned_hash; "
            "print(versioned_hash(json.loads(sys.stdin.read())))")
    hashes = set()
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], input=json.dumps(reordered(VALUE)), capture_output=True,
                             text=True, env=dict(os.environ, PYTHONHASHSEED=seed), timeout=60, check=True)
        hashes.add(out.stdout.strip())
    assert hashes == {versioned_hash(VALUE)}


def write_suite(d: Path, lines: list[str], description: str = "d") -> Path:
    d.mkdir(parents=True)
    (d / "suite.toml").write_text(f'name = "s"\nversion = "1"\ndescription = "{description}"\n', encoding="utf-8")
    (d / "questions.jsonl").write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    return d


def test_suite_fingerprint_follows_content_not_layout(tmp_path: Path) -> None:
    a = write_suite(tmp_path / "a", ['{"id": "q1", "kind": "mc", "text": "2+2?", "choices": ["3", "4"], "answer": 1}'])
    b = write_suite(tmp_path / "b", ['{"answer":1,"choices":["3","4"],"text":"2+2?","kind":"mc","id":"q1"}'],
                    description="another description")
    c = write_suite(tmp_path / "c", ['{"id": "q1", "kind": "mc", "text": "2+2?", "choices": ["3", "4"], "answer": 0}'])
    fa, fb, fc = (load_suite(d).fingerprint for d in (a, b, c))
    assert fa == fb  # key order, whitespace and the description do not count
    assert fa != fc  # the answer does
    assert fa.startswith("s1:")


def test_bundled_suite_fingerprint_is_the_same_in_another_process() -> None:
    suites = Path(__file__).resolve().parent.parent / "suites"
    code = f"from pathlib import Path; from probe.suite_io import load_suite; print(load_suite(Path({str(suites / 'science')!r})).fingerprint)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env=dict(os.environ, PYTHONHASHSEED="7"))
    assert out.stdout.strip() == load_suite(suites / "science").fingerprint
