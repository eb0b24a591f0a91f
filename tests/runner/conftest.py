"""Runner tests run against the real simulator on loopback."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from probe.sim import running_sim


def sim_stats(base_url: str) -> dict[str, object]:
    root = base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/sim/stats", timeout=10) as r:
        data: dict[str, object] = json.loads(r.read())
    return data


def chat_calls(base_url: str) -> int:
    by_endpoint = sim_stats(base_url)["by_endpoint"]
    assert isinstance(by_endpoint, dict)
    return sum(int(v) for k, v in by_endpoint.items() if k == "chat.completions")


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with running_sim() as url:
        yield url


@pytest.fixture
def sim_env(sim_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SIM_BASE_URL", sim_url)
    return sim_url
