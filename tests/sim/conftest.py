"""Fixtures for the simulator tests: small suites made here, and one simulator per module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from probe.sim import running_sim, stats_url
from probe.suite import PromptVariant, Question, Suite

CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Kenya", "Nairobi"), ("Peru", "Lima"),
            ("Chile", "Santiago"), ("Egypt", "Cairo"), ("Norway", "Oslo"), ("Cuba", "Havana")]


def mini_questions() -> list[Question]:
    qs: list[Question] = []
    cities = [c for _, c in CAPITALS]
    for i, (country, city) in enumerate(CAPITALS):
        others = [c for c in cities if c != city][i % 4: i % 4 + 3]
        choices = [*others[: i % 4], city, *others[i % 4:]][:4]
        qs.append(Question(id=f"mc-{country.lower()}", kind="mc", text=f"What is the capital of {country}?",
                           choices=tuple(choices), answer=choices.index(city), subject="capitals"))
        qs.append(Question(id=f"short-{country.lower()}", kind="short",
                           text=f"Which city is the capital of {country}?", aliases=(city, f"{city} City"),
                           subject="capitals"))
    for a, b in [(12, 30), (45, 17), (99, 101), (250, 250)]:
        qs.append(Question(id=f"sum-{a}-{b}", kind="short", text=f"What is {a} + {b}?", aliases=(str(a + b),),
                           subject="addition", tags=("difficulty:hard",)))
    return qs


VARIANTS = (
    PromptVariant(id="plain"),
    PromptVariant(id="shuffled", shuffle_seed=7),
    PromptVariant(id="expert", system="You are a careful expert."),
)


@pytest.fixture(scope="session")
def mini_suite() -> Suite:
    return Suite(name="mini", version="1", variants=VARIANTS, questions=tuple(mini_questions()))


def write_suite(directory: Path, suite: Suite) -> Path:
    """Write ``suite`` as a suite directory (suite.toml + questions.jsonl)."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f'name = "{suite.name}"', f'version = "{suite.version}"', 'description = "made by a test"']
    (directory / "suite.toml").write_text("\n".join(lines) + "\n")
    with (directory / "questions.jsonl").open("w") as f:
        for q in suite.questions:
            f.write(json.dumps(q.model_dump(mode="json", exclude_none=True)) + "\n")
    return directory


@pytest.fixture(scope="module")
def sim_url(mini_suite: Suite) -> Iterator[str]:
    with running_sim(suites=[mini_suite], bundled=False, retry_after=0, hang_s=30) as url:
        yield url


@pytest.fixture()
def client(sim_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim_url, timeout=10) as c:
        c.post(stats_url(sim_url) + "/reset")
        yield c


def stats(url: str) -> dict[str, object]:
    out: dict[str, object] = httpx.get(stats_url(url), timeout=10).json()
    return out
