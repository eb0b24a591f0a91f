"""The bundled suites: they load, are big enough, ship three variants, and their answers are right."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from probe.prompts import answer_prompt
from probe.suite import Suite
from probe.suite_io import available_suites, load_suite

SUITES = Path(__file__).resolve().parent.parent / "suites"
REQUIRED = {"arithmetic": 2000, "calendar": 150, "capitals": 150, "elements": 150, "science": 100, "demo": 50}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")


@cache
def suite(name: str) -> Suite:
    return load_suite(SUITES / name)


def test_bundled_suites_are_exactly_the_real_ones() -> None:
    on_disk = sorted(p.name for p in SUITES.iterdir() if (p / "suite.toml").is_file())
    assert on_disk == sorted(REQUIRED)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_suite_loads_with_metadata_and_enough_questions(name: str) -> None:
    s = suite(name)
    assert s.name == name
    assert len(s.questions) >= REQUIRED[name]
    for field in ("version", "description", "license", "source"):
        assert getattr(s, field).strip(), f"{name}: {field} is empty"
    assert re.fullmatch(r"s1:[0-9a-f]{64}", s.fingerprint)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_suite_lists_three_variants_in_its_toml(name: str) -> None:
    text = (SUITES / name / "suite.toml").read_text(encoding="utf-8")
    assert text.count("[[variants]]") >= 3  # explicit, not the defaults
    ids = [v.id for v in suite(name).variants]
    assert {"plain", "expert", "shuffled"} <= set(ids)
    assert suite(name).variant("expert").system
    assert suite(name).variant("shuffled").shuffle_seed is not None


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_correct_answers_are_not_bunched_on_one_position(name: str) -> None:
    positions = Counter(q.answer for q in suite(name).questions if q.kind == "mc")
    total = sum(positions.values())
    assert total > 0
    assert max(positions.values()) / total < 0.4, positions


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_shuffled_variant_permutes_and_the_correct_answer_follows(name: str) -> None:
    s = suite(name)
    plain, shuffled = s.variant("plain"), s.variant("shuffled")
    moved = 0
    mc = [q for q in s.questions if q.kind == "mc"]
    for q in mc:
        assert q.choices is not None and q.answer is not None
        order = shuffled.order(q)
        assert sorted(order) == list(range(len(q.choices)))
        assert order == shuffled.order(q)  # seeded: the same every time
        assert plain.order(q) == tuple(range(len(q.choices)))
        moved += order != plain.order(q)
        prompt = answer_prompt(q, shuffled)
        label = prompt.label_of_choice(q.answer)
        assert f"{label}. {q.correct_text}" in prompt.messages[-1].content
        assert prompt.choice_of_label(label) == q.answer
    assert moved / len(mc) > 0.7  # 4 options: 23 of 24 permutations move something


def test_question_ids_are_unique_and_stable_looking() -> None:
    for name in REQUIRED:
        ids = [q.id for q in suite(name).questions]
        assert len(ids) == len(set(ids))
        assert all(re.fullmatch(r"[a-z0-9][a-z0-9._-]*", i) for i in ids), name


def test_arithmetic_answers_are_the_true_results() -> None:
    s = suite("arithmetic")
    kinds = Counter(q.kind for q in s.questions)
    assert kinds["mc"] >= 1000 and kinds["short"] >= 1000
    levels = Counter(t for q in s.questions for t in q.tags if t.startswith("difficulty:"))
    assert set(levels) == {"difficulty:easy", "difficulty:medium", "difficulty:hard"}
    for q in s.questions:
        m = re.fullmatch(r"What is (\d+) ([+×]) (\d+)\?", q.text)
        assert m, q.text
        a, op, b = int(m[1]), m[2], int(m[3])
        result = a + b if op == "+" else a * b
        assert q.correct_text == str(result), q.id
        if q.kind == "mc":
            assert q.choices is not None
            wrong = [int(c) for c in q.choices if c != str(result)]
            assert len(wrong) == 3 and all(w > 0 for w in wrong)
            # near misses: the same number of digits, give or take one
            assert all(abs(len(str(w)) - len(str(result))) <= 1 for w in wrong), q.id
        else:
            assert q.aliases is not None and q.aliases[0] == str(result)


def test_calendar_answers_are_the_true_weekdays() -> None:
    s = suite("calendar")
    years = set()
    for q in s.questions:
        m = re.fullmatch(r"In the Gregorian calendar, what day of the week is (\d+) (\w+) (\d+)\?", q.text)
        assert m, q.text
        day = dt.date(int(m[3]), MONTHS.index(m[2]) + 1, int(m[1]))
        years.add(day.year // 100)
        assert q.kind == "mc" and q.choices is not None and len(q.choices) == 4
        assert set(q.choices) <= set(WEEKDAYS)
        assert q.correct_text == WEEKDAYS[day.weekday()], q.id
    assert len(years) >= 5  # across centuries


def test_capitals_facts_spot_checks() -> None:
    s = suite("capitals")
    by_id = {q.id: q for q in s.questions}
    assert by_id["mc-france"].correct_text == "Paris"
    assert by_id["mc-australia"].correct_text == "Canberra"
    assert {"Kyiv", "Kiev"} <= set(by_id["short-ukraine"].aliases or ())
    assert {"Washington, D.C.", "Washington"} <= set(by_id["short-united-states"].aliases or ())
    assert set(by_id["short-bolivia"].aliases or ()) == {"Sucre", "La Paz"}
    assert "mc-bolivia" not in by_id  # two capitals: short answer only
    kinds = Counter(q.kind for q in s.questions)
    assert kinds["mc"] >= 150 and kinds["short"] >= 150
    # a distractor is never a capital of the country asked about
    for q in s.questions:
        if q.kind == "mc":
            short = by_id.get(q.id.replace("mc-", "short-", 1))
            assert short is not None and short.aliases is not None
            wrong = set(q.choices or ()) - {q.correct_text}
            assert not wrong & set(short.aliases), q.id


def test_elements_facts_spot_checks() -> None:
    s = suite("elements")
    by_id = {q.id: q for q in s.questions}
    assert by_id["number-of-fe"].correct_text == "26"
    assert by_id["symbol-of-k"].correct_text == "K"
    assert by_id["name-of-og"].correct_text == "Oganesson"
    assert {"Tungsten", "Wolfram"} == set(by_id["name-of-w"].aliases or ())
    assert {"Aluminium", "Aluminum"} == set(by_id["name-of-al"].aliases or ())
    names = [q for q in s.questions if q.id.startswith("name-of-")]
    assert len(names) == 118
    numbers = sorted(int(q.correct_text) for q in s.questions if q.id.startswith("number-of-"))
    assert numbers == list(range(1, 119))


def test_science_is_hand_written_mc_across_fields() -> None:
    s = suite("science")
    assert all(q.kind == "mc" and q.choices is not None and len(q.choices) == 4 for q in s.questions)
    subjects = Counter(q.subject for q in s.questions)
    assert set(subjects) == {"physics", "chemistry", "biology", "earth science", "astronomy"}
    assert min(subjects.values()) >= 20


def test_demo_items_are_copies_of_their_sources() -> None:
    demo = suite("demo")
    kinds = Counter(q.kind for q in demo.questions)
    assert 50 <= len(demo.questions) <= 70 and kinds["mc"] > kinds["short"] > 0
    sources = set()
    for q in demo.questions:
        source, _, original_id = q.id.partition("-")
        sources.add(source)
        original = suite(source).question(original_id)
        assert q.model_dump(exclude={"id", "tags"}) == original.model_dump(exclude={"id", "tags"})
        assert q.tags[0] == f"source:{source}"
    assert sources == {"arithmetic", "calendar", "capitals", "elements", "science"}


def test_suites_are_found_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # not the repo: the bundled suites are still found
    monkeypatch.delenv("PROBE_SUITES_PATH", raising=False)
    assert set(REQUIRED) <= set(available_suites())


def test_jsonl_lines_are_one_compact_object_each() -> None:
    for name in REQUIRED:
        text = (SUITES / name / "questions.jsonl").read_text(encoding="utf-8")
        assert text.endswith("\n") and "\n\n" not in text
        for line in text.splitlines():
            assert isinstance(json.loads(line), dict)
