"""Response and error bodies in the vendors' wire formats (pure: plain dicts for JSON).

OpenAI Chat Completions as documented (``choices[].message``, ``choices[].logprobs.content[]``
with ``token``, ``logprob``, ``bytes``, ``top_logprobs``; ``usage``; ``system_fingerprint``;
errors as ``{"error": {"message", "type", "param", "code"}}``) and Anthropic Messages
(``content[]`` text blocks, ``stop_reason``, ``usage``; errors as ``{"type": "error", "error":
{"type", "message"}, "request_id"}``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal

from probe.sim._generate import Generation
from probe.sim._tokens import Token

Api = Literal["openai", "anthropic"]
Headers = list[tuple[bytes, bytes]]
RATE_LIMIT_RPM = 60


@lru_cache(maxsize=65536)
def token_bytes(token: str) -> tuple[int, ...]:
    return tuple(token.encode("utf-8"))


def _entry(tok: Token, top: int) -> dict[str, Any]:
    return {
        "token": tok.text,
        "logprob": tok.logprob,
        "bytes": token_bytes(tok.text),
        "top_logprobs": [{"token": t, "logprob": lp, "bytes": token_bytes(t)} for t, lp in tok.top[:top]],
    }


def logprobs_content(gen: Generation, top: int) -> list[dict[str, Any]]:
    return [_entry(t, top) for t in gen.tokens]


def openai_chat(*, rid: str, created: int, model: str, gens: Sequence[Generation],
                logprobs: Sequence[list[dict[str, Any]] | None], prompt_tokens: int,
                fingerprint: str) -> dict[str, Any]:
    """A ``chat.completion`` object; ``logprobs[i]`` is choice i's content list or None."""
    choices = []
    completion_tokens = 0
    for i, (g, lp) in enumerate(zip(gens, logprobs, strict=True)):
        completion_tokens += len(g.tokens)
        choices.append({
            "index": i,
            "message": {"role": "assistant", "content": g.text, "refusal": None, "annotations": []},
            "logprobs": None if lp is None else {"content": lp, "refusal": None},
            "finish_reason": "length" if g.finish_reason == "length" else "stop",
        })
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": fingerprint,
    }


def anthropic_message(*, rid: str, model: str, gen: Generation, input_tokens: int) -> dict[str, Any]:
    """A Messages API ``message`` object."""
    reason = {"length": "max_tokens", "stop_sequence": "stop_sequence"}.get(gen.finish_reason, "end_turn")
    return {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": gen.text}],
        "stop_reason": reason,
        "stop_sequence": gen.stop if reason == "stop_sequence" else None,
        "usage": {"input_tokens": input_tokens, "output_tokens": len(gen.tokens),
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "service_tier": "standard"},
    }


def openai_models(model_ids: Sequence[str], created: int) -> dict[str, Any]:
    return {"object": "list",
            "data": [{"id": m, "object": "model", "created": created, "owned_by": "probe-sim"} for m in model_ids]}


def anthropic_models(model_ids: Sequence[str], created_at: str) -> dict[str, Any]:
    data = [{"type": "model", "id": m, "display_name": m, "created_at": created_at} for m in model_ids]
    return {"data": data, "has_more": False, "first_id": model_ids[0] if model_ids else None,
            "last_id": model_ids[-1] if model_ids else None}


# -- errors ---------------------------------------------------------------------------------

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 405: "invalid_request_error", 413: "request_too_large",
                    429: "rate_limit_error", 500: "api_error", 503: "overloaded_error", 529: "overloaded_error"}


def error_body(api: Api, status: int, message: str, request_id: str, *, openai_type: str = "invalid_request_error",
               code: str | None = None, param: str | None = None,
               anthropic_type: str | None = None, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """An error body in the API's own shape."""
    if api == "openai":
        return {"error": {"message": message, "type": openai_type, "param": param, "code": code}}
    err: dict[str, Any] = {"type": anthropic_type or _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}
    if details:
        err["details"] = details
    return {"type": "error", "error": err, "request_id": request_id}


def retry_after_value(seconds: float) -> str:
    """``retry-after`` as servers send it: whole seconds when whole, else a decimal."""
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


def fault_response(api: Api, kind: str, *, model: str, request_id: str,
                   retry_after: float) -> tuple[int, dict[str, Any], Headers]:
    """Status, body and extra headers of an injected HTTP error ``kind``."""
    headers: Headers = []
    if kind == "429":
        ra = retry_after_value(retry_after)
        headers = [(b"retry-after", ra.encode()), (b"retry-after-ms", str(round(retry_after * 1000)).encode())]
        if api == "openai":
            headers += [(b"x-ratelimit-limit-requests", str(RATE_LIMIT_RPM).encode()),
                        (b"x-ratelimit-remaining-requests", b"0"),
                        (b"x-ratelimit-reset-requests", f"{ra}s".encode())]
            msg = (f"Rate limit reached for {model} in organization org-probe-sim on requests per min (RPM): "
                   f"Limit {RATE_LIMIT_RPM}, Used {RATE_LIMIT_RPM}, Requested 1. Please try again in {ra}s.")
            return 429, error_body(api, 429, msg, request_id, openai_type="requests",
                                   code="rate_limit_exceeded"), headers
        reset = (datetime.now(UTC) + timedelta(seconds=math.ceil(retry_after))).strftime("%Y-%m-%dT%H:%M:%SZ")
        headers += [(b"anthropic-ratelimit-requests-limit", str(RATE_LIMIT_RPM).encode()),
                    (b"anthropic-ratelimit-requests-remaining", b"0"),
                    (b"anthropic-ratelimit-requests-reset", reset.encode())]
        msg = (f"This request would exceed the rate limit for your organization of {RATE_LIMIT_RPM} requests "
               "per minute. For details, refer to the response headers.")
        return 429, error_body(api, 429, msg, request_id), headers
    if kind == "quota":
        if api == "openai":
            msg = "You exceeded your current quota, please check your plan and billing details."
            return 429, error_body(api, 429, msg, request_id, openai_type="insufficient_quota",
                                   code="insufficient_quota"), headers
        msg = "You have reached your specified API usage limits. You will regain access next month."
        return 429, error_body(api, 429, msg, request_id,
                               details={"error_code": "enforced_spend_limit_reached"}), headers
    if kind == "401":
        if api == "openai":
            return 401, error_body(api, 401, "Incorrect API key provided. You can find your API key in your "
                                   "account settings.", request_id, code="invalid_api_key"), headers
        return 401, error_body(api, 401, "invalid x-api-key", request_id), headers
    if kind == "500":
        msg = ("The server had an error while processing your request. Sorry about that!" if api == "openai"
               else "Internal server error")
        return 500, error_body(api, 500, msg, request_id, openai_type="server_error"), headers
    if kind == "503":
        return 503, error_body(api, 503, "The engine is currently overloaded, please try again later.",
                               request_id, openai_type="server_error", code="overloaded"), headers
    if kind == "529":
        return 529, error_body(api, 529, "Overloaded", request_id, openai_type="server_error",
                               code="overloaded"), headers
    raise ValueError(f"not an HTTP error fault: {kind}")


HTTP_ERROR_FAULTS = frozenset({"429", "quota", "401", "500", "503", "529"})
