"""Raw HTTP (aiohttp) and official-SDK helpers for talking to the real llama.cpp server in tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import aiohttp
import openai

MODEL = "tiny"
QUESTION = "What is the capital of Mali?\n\nA. Bamako\nB. Timbuktu\nC. Dakar\nD. Niamey\n\nAnswer with the letter of the correct option only."

# (token, logprob, ((alt token, alt logprob), ...)) per generated position
Row = tuple[str, float | None, tuple[tuple[str, float | None], ...]]


@dataclass(frozen=True)
class Reply:
    """One raw HTTP response."""

    status: int
    content_type: str
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


async def _request(method: str, url: str, body: Any, headers: dict[str, str] | None) -> Reply:
    data = body if isinstance(body, str) or body is None else json.dumps(body)
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.request(
        method, url, data=data, headers=hdrs
    ) as resp:
        return Reply(resp.status, resp.headers.get("Content-Type", ""), await resp.text())


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> Reply:
    """POST ``body`` (a dict, sent as JSON, or a raw string) and return the raw reply."""
    return asyncio.run(_request("POST", url, body, headers))


def get(url: str, headers: dict[str, str] | None = None) -> Reply:
    return asyncio.run(_request("GET", url, None, headers))


def chat_body(content: str = QUESTION, **extra: Any) -> dict[str, Any]:
    """A greedy chat request for the tiny model."""
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 3,
        "temperature": 0,
        **extra,
    }


def sdk(base_url: str, api_key: str = "no-key-needed") -> openai.OpenAI:
    """The official SDK pointed at the server, with its own retries off (one call = one request)."""
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=60)


def raw_rows(body: dict[str, Any]) -> list[Row]:
    """Per-position rows from a raw chat completion body (choice 0)."""
    content = body["choices"][0]["logprobs"]["content"]
    return [
        (
            item["token"],
            item["logprob"],
            tuple((alt["token"], alt["logprob"]) for alt in item["top_logprobs"]),
        )
        for item in content
    ]


def sdk_rows(completion: Any) -> list[Row]:
    """The same rows from an ``openai`` ChatCompletion (choice 0)."""
    content = completion.choices[0].logprobs.content
    assert content is not None
    return [
        (item.token, item.logprob, tuple((alt.token, alt.logprob) for alt in item.top_logprobs))
        for item in content
    ]
