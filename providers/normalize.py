"""Pure normalization shared by every wire format: logprob values, bytes, token lists, states.

Rules (../shared/providers.md §1):
- a logprob that is null, non-finite, ≤ -9999 (OpenAI/vLLM placeholder, llama.cpp's float lowest)
  or clearly positive is *missing*: ``None``, and the choice is ``partial`` naming where;
- token strings are kept exactly as sent (leading spaces matter);
- ``bytes`` are kept where given, except U+FFFD replacement bytes (``EF BF BD``), which vLLM and
  Ollama emit for partial UTF-8: the true bytes are unknown, so they become ``None``;
- text is rebuilt from bytes (falling back to token strings) only where the API gave no text.

Converters build plain dicts with these helpers and validate the whole Completion once at the end
(one pass in pydantic's compiled core is cheaper than constructing each nested model in Python).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

from probe.completion import Completion, LogprobState

PLACEHOLDER_FLOOR = -9999.0
# Float rounding can push a certain token's logprob a hair above zero; more than this is invalid.
POSITIVE_TOLERANCE = 1e-4
_REPLACEMENT = bytes((0xEF, 0xBF, 0xBD))
_MAX_LISTED = 8


class MalformedPayload(ValueError):
    """A response body that does not have the shape its API documents."""


class TopDict(TypedDict):
    token: str
    logprob: float | None
    bytes: list[int] | None
    id: int | None


class TokenDict(TopDict):
    top: list[TopDict]


class ChoiceDict(TypedDict):
    index: int
    text: str
    finish_reason: str | None
    tokens: list[TokenDict] | None
    logprob_state: LogprobState
    logprob_reason: str | None
    refusal: str | None


def clean_logprob(value: Any) -> float | None:
    """A usable natural-log probability, or None for a placeholder / missing value."""
    if type(value) is float and PLACEHOLDER_FLOOR < value <= 0.0:
        return value  # the common case, first
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedPayload(f"logprob is not a number: {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= PLACEHOLDER_FLOOR:
        return None
    if v > 0.0:
        return 0.0 if v <= POSITIVE_TOLERANCE else None
    return v


def clean_bytes(value: Any) -> list[int] | None:
    """Token bytes, or None when absent or when they are replacement bytes."""
    if value is None:
        return None
    if type(value) is not list:
        raise MalformedPayload(f"bytes is not a list: {value!r}")
    try:
        raw = bytes(value)  # TypeError for non-integers, ValueError outside 0..255
    except (TypeError, ValueError):
        raise MalformedPayload(f"bytes is not a list of byte values: {value!r}") from None
    return None if _REPLACEMENT in raw else value


def clean_id(value: Any) -> int | None:
    """A token id if it is an integer, else None."""
    return value if type(value) is int else None


def token_string(value: Any) -> str:
    """The token string exactly as sent; a missing/non-string token is malformed."""
    if type(value) is not str:
        raise MalformedPayload(f"token is not a string: {value!r}")
    return value


def make_top(token: str, logprob: float | None, raw_bytes: list[int] | None = None,
             token_id: int | None = None) -> TopDict:
    return {"token": token, "logprob": logprob, "bytes": raw_bytes, "id": token_id}


def make_token(token: str, logprob: float | None, raw_bytes: list[int] | None, token_id: int | None,
               top: list[TopDict]) -> TokenDict:
    return {"token": token, "logprob": logprob, "bytes": raw_bytes, "id": token_id, "top": top}


def sort_top(top: Sequence[TopDict]) -> list[TopDict]:
    """Alternatives most likely first; missing logprobs last; stable otherwise."""
    return sorted(top, key=lambda t: -math.inf if t["logprob"] is None else t["logprob"], reverse=True)


def token_bytes(tok: TopDict) -> bytes:
    """The token's bytes where known, else its string encoded as UTF-8."""
    return bytes(tok["bytes"]) if tok["bytes"] is not None else tok["token"].encode("utf-8")


def text_from_tokens(tokens: Sequence[TopDict]) -> str:
    """Rebuild text from token bytes (where given) so split UTF-8 characters join up again."""
    return b"".join(token_bytes(t) for t in tokens).decode("utf-8", errors="replace")


def trim_past_text(tokens: list[TokenDict], text: str) -> list[TokenDict]:
    """Drop tokens listed past the returned text (llama.cpp with a stop string lists them).

    Only trims when the tokens' text starts with the returned text and runs longer; otherwise
    the tokens are returned unchanged (special tokens, reasoning text: nothing to infer).
    """
    target = text.encode("utf-8")
    joined = b"".join(token_bytes(t) for t in tokens)
    if len(joined) <= len(target) or not joined.startswith(target):
        return tokens
    size = 0
    for i, tok in enumerate(tokens):
        if size >= len(target):
            return tokens[:i]
        size += len(token_bytes(tok))
    return tokens


def _positions(idx: list[int]) -> str:
    shown = ",".join(str(i) for i in idx[:_MAX_LISTED])
    return shown + (f",… ({len(idx)} in all)" if len(idx) > _MAX_LISTED else "")


def logprob_state(tokens: Sequence[TokenDict], top_k: int | None) -> tuple[LogprobState, str | None]:
    """``available``, or ``partial`` with a reason naming the positions that miss something."""
    missing = [i for i, t in enumerate(tokens) if t["logprob"] is None]
    bad_top = [i for i, t in enumerate(tokens) if any(a["logprob"] is None for a in t["top"])]
    no_top = [i for i, t in enumerate(tokens) if not t["top"]] if top_k else []
    parts = []
    if missing:
        parts.append(f"token logprob missing at positions {_positions(missing)}")
    if bad_top:
        parts.append(f"alternative logprobs missing at positions {_positions(bad_top)}")
    if no_top:
        parts.append(f"no alternatives at positions {_positions(no_top)} (asked for {top_k})")
    if parts:
        return "partial", "; ".join(parts)
    return "available", None


def make_choice(*, index: int, text: str, finish_reason: str | None, tokens: list[TokenDict] | None,
                state: LogprobState, reason: str | None, refusal: str | None = None) -> ChoiceDict:
    return {"index": index, "text": text, "finish_reason": finish_reason, "tokens": tokens,
            "logprob_state": state, "logprob_reason": reason, "refusal": refusal}


def choice_with_tokens(*, index: int, text: str, finish_reason: str | None, tokens: list[TokenDict],
                       top_k: int | None, refusal: str | None = None) -> ChoiceDict:
    """A choice carrying tokens, its state computed from what is missing."""
    if finish_reason == "stop":
        tokens = trim_past_text(tokens, text)
    if not tokens and text:  # text but no token data: the endpoint dropped them
        return unavailable_choice(index=index, text=text, finish_reason=finish_reason, reason="endpoint_dropped",
                                  refusal=refusal)
    state, reason = logprob_state(tokens, top_k)
    return make_choice(index=index, text=text, finish_reason=finish_reason, tokens=tokens, state=state,
                       reason=reason, refusal=refusal)


def unavailable_choice(*, index: int, text: str, finish_reason: str | None, reason: str,
                       refusal: str | None = None) -> ChoiceDict:
    """A choice without logprobs, saying why."""
    return make_choice(index=index, text=text, finish_reason=finish_reason, tokens=None, state="unavailable",
                       reason=reason, refusal=refusal)


def count(value: Any) -> int | None:
    """A non-negative integer count, else None."""
    return value if type(value) is int and value >= 0 else None


def build_completion(choices: list[ChoiceDict], *, model_reported: Any, input_tokens: int | None,
                     output_tokens: int | None, latency_s: float, dropped: tuple[str, ...] = (),
                     top_k: int | None = None) -> Completion:
    """Validate the assembled dicts into a Completion, choices in index order."""
    choices.sort(key=lambda c: c["index"])
    return Completion.model_validate({
        "choices": choices, "model_reported": model_reported if isinstance(model_reported, str) else None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        "latency_s": max(0.0, latency_s), "dropped_params": dropped, "top_k_requested": top_k,
    })
