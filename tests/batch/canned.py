"""Deterministic canned answers: the same request body always gets the same response body.

Both a live call and a batch line of the same request are answered by these functions, so the records
of a batch run and of a live run of the same plan can be compared field by field. The answers follow
the prompt kind (probe.prompts.MARKERS): an option label with top-k logprobs over the labels, a short
answer, A/B for the self-evaluation, "Answer: … / Confidence: …" for the verbal forms.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from probe.prompts import HEDGES, MARKERS

_LABEL = re.compile(r"^([A-Z])\. ", re.MULTILINE)
_SHORT = ("Paris", "42", "Oxygen", "Tuesday", "Lima", "1133")


def _h(*parts: object) -> int:
    return int(hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12], 16)


def _user_text(messages: list[dict[str, Any]]) -> str:
    users = [m["content"] for m in messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def _answer_text(text: str, seed: int) -> tuple[str, list[str]]:
    """(answer text, the alternatives a logprob distribution spreads over)."""
    labels = _LABEL.findall(text)
    if MARKERS["ptrue"] in text:
        return ("A" if seed % 3 else "B"), ["A", "B"]
    if MARKERS["verbal_numeric"] in text:
        answer = labels[seed % len(labels)] if labels else _SHORT[seed % len(_SHORT)]
        return f"Answer: {answer}\nConfidence: {40 + seed % 60}%", []
    if MARKERS["verbal_linguistic"] in text:
        answer = labels[seed % len(labels)] if labels else _SHORT[seed % len(_SHORT)]
        hedges = list(HEDGES)
        return f"Answer: {answer}\nConfidence: {hedges[seed % len(hedges)]}", []
    if labels:
        return labels[seed % len(labels)], labels
    return _SHORT[seed % len(_SHORT)], []


def _token(tok: str, lp: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {"token": tok, "logprob": lp, "bytes": list(tok.encode()),
            "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top]}


def _logprobs(text: str, alts: list[str], seed: int, k: int) -> list[dict[str, Any]]:
    words = re.findall(r"\S+|\s+", text) or [text]
    out = []
    for i, word in enumerate(words):
        p = 0.35 + (seed >> (i + 3)) % 60 / 100.0  # 0.35 … 0.94
        lp = math.log(p)
        others = [a for a in alts if a != word] if i == 0 and alts else ["the", "a", "an", "so"]
        rest = (1.0 - p) / max(len(others), 1)
        top = [(word, lp)] + [(o, math.log(rest * (0.9 ** j))) for j, o in enumerate(others)]
        out.append(_token(word, lp, top[: max(k, 0)]))
    return out


def openai_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A ``chat.completion`` for a Chat Completions request body."""
    messages = body["messages"]
    text_in = _user_text(messages)
    n = int(body.get("n", 1))
    want = bool(body.get("logprobs"))
    k = int(body.get("top_logprobs", 0) or 0)
    choices = []
    out_tokens = 0
    for j in range(n):
        seed = _h(messages, j if n > 1 else None, body.get("seed"))
        text, alts = _answer_text(text_in, seed)
        lps = _logprobs(text, alts, seed, k) if want else None
        out_tokens += len(lps) if lps else max(1, len(text) // 4)
        choices.append({"index": j, "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": {"content": lps, "refusal": None} if lps is not None else None,
                        "finish_reason": "stop"})
    return {"id": f"chatcmpl-{_h(messages) % 10**9}", "object": "chat.completion", "created": 1767225600,
            "model": f"{body['model']}-2024-07-18", "choices": choices,
            "usage": {"prompt_tokens": sum(len(str(m['content'])) for m in messages) // 4 + 3,
                      "completion_tokens": out_tokens, "total_tokens": 0},
            "system_fingerprint": "fp_canned"}


def anthropic_message(params: dict[str, Any]) -> dict[str, Any]:
    """A Messages ``message`` for ``messages.create`` parameters."""
    messages = params["messages"]
    seed = _h(messages, params.get("system"))
    text, _alts = _answer_text(_user_text(messages), seed)
    return {"id": f"msg_{seed % 10**9}", "type": "message", "role": "assistant", "model": f"{params['model']}-20250929",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": sum(len(str(m['content'])) for m in messages) // 4 + 3,
                      "output_tokens": max(1, len(text) // 4)}}
