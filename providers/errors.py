"""Pure classification of failed calls into CallFailure values (no IO).

Every API family's error body is read here: OpenAI ``error.{type,code,param}`` (code a string),
vLLM / llama.cpp ``error.code`` as an integer, Azure ``error.code`` "429" as a string,
Anthropic ``{"type":"error","error":{"type":...}}``, Gemini ``error.status`` +
``details[RetryInfo].retryDelay``, OpenRouter's 200 with an error body, FastAPI's ``{"detail": ...}``.
Delays come from ``retry-after-ms`` > ``retry-after`` > rate-limit reset headers > the body.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from probe.completion import CallFailure, ErrorKind, ProviderError
from providers import jsonio

Redact = Callable[[str], str]
_MAX_MESSAGE = 400

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|h|m|s)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_MESSAGE_DELAY = re.compile(
    r"(?i)(?:try again in|retry in|retry after|retry-after:?)\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec(?:ond)?s?)?"
)
_QUOTA_CODES = frozenset({
    "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "enforced_spend_limit_reached",
    "contract_spend_limit_reached", "billing_error", "credits_exhausted",
})
_REFUSAL_CODES = frozenset({"content_filter", "content_policy_violation", "responsibleaipolicyviolation"})
_LOGPROB_REFUSAL = re.compile(r"(?i)logprobs?\b.*\b(not (?:supported|enabled|allowed|available)|unsupported)"
                              r"|not allowed to request logprobs|unsupported parameter:?\s*'?(?:top_)?logprobs"
                              r"|unrecognized request argument supplied:?\s*logprobs"
                              r"|does not support the '?logprobs'?")


def go_duration_seconds(text: str) -> float | None:
    """Seconds in a Go duration such as ``6m0s`` or ``12ms`` (OpenAI reset headers)."""
    text = text.strip()
    if not text:
        return None
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        try:
            return max(0.0, float(text))
        except ValueError:
            return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _parse_when(value: str, now: float) -> float | None:
    """Seconds until an HTTP-date or RFC 3339 timestamp (Anthropic reset headers)."""
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return max(0.0, when - now)


def retry_after_from_headers(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The server's requested delay from headers, in seconds, or None."""
    now = time.time() if now is None else now
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = _header(headers, "retry-after")
    if ra is not None:
        try:
            return max(0.0, float(ra))
        except ValueError:
            when = _parse_when(ra, now)
            if when is not None:
                return when
    resets: list[float] = []
    for kind in ("requests", "tokens", "input-tokens", "output-tokens"):
        for prefix in ("x-ratelimit", "anthropic-ratelimit"):
            remaining = _header(headers, f"{prefix}-remaining-{kind}" if prefix == "x-ratelimit"
                                else f"{prefix}-{kind}-remaining")
            reset = _header(headers, f"{prefix}-reset-{kind}" if prefix == "x-ratelimit"
                            else f"{prefix}-{kind}-reset")
            if reset is None or remaining is None or remaining.strip() not in ("0", "0.0"):
                continue
            secs = go_duration_seconds(reset) if prefix == "x-ratelimit" else _parse_when(reset, now)
            if secs is not None:
                resets.append(secs)
    return max(resets) if resets else None


def retry_after_from_body(error: Mapping[str, Any]) -> float | None:
    """Gemini ``RetryInfo.retryDelay`` ("47s"), else a "try again in 20s" hint in the message."""
    details = error.get("details")
    if isinstance(details, list):
        for d in details:
            if isinstance(d, dict) and str(d.get("@type", "")).endswith("RetryInfo"):
                delay = d.get("retryDelay")
                if isinstance(delay, str):
                    secs = go_duration_seconds(delay)
                    if secs is not None:
                        return secs
    message = error.get("message")
    if isinstance(message, str):
        m = _MESSAGE_DELAY.search(message)
        if m:
            value = float(m.group(1))
            return value / 1000.0 if (m.group(2) or "s").lower().startswith("m") else value
    return None


def parse_body(body: bytes | str | None) -> Any:
    """The JSON body, or None when it is not JSON."""
    if body is None:
        return None
    try:
        return jsonio.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def error_object(payload: Any) -> dict[str, Any] | None:
    """The error object inside a body of any family, or None if the body is not an error."""
    if not isinstance(payload, dict):
        return None
    err = payload.get("error")
    if isinstance(err, dict):
        return err
    if isinstance(err, str):
        return {"message": err}
    if payload.get("object") == "error" or payload.get("type") == "error":
        return payload
    if isinstance(payload.get("detail"), str | list) and len(payload) <= 2:
        return {"message": str(payload["detail"])}
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _per_day_quota(details: list[Any]) -> bool:
    """Gemini QuotaFailure naming a per-day quota: it will not clear for hours."""
    for d in details:
        violations = d.get("violations") if isinstance(d, dict) else None
        if isinstance(violations, list) and any(
            isinstance(v, dict) and "PerDay" in _text(v.get("quotaId")) for v in violations
        ):
            return True
    return False


def error_fields(err: Mapping[str, Any] | None) -> tuple[str, str, str, str]:
    """(message, type, code, param) of an error object, lower-cased except the message."""
    if not err:
        return "", "", "", ""
    message = _text(err.get("message"))
    etype = _text(err.get("type")) or _text(err.get("status"))
    code = err.get("code")
    code_s = str(code) if isinstance(code, int | str) and not isinstance(code, bool) else ""
    details = err.get("details")
    if isinstance(details, dict) and isinstance(details.get("error_code"), str):
        code_s = details["error_code"]
    if isinstance(details, list) and _per_day_quota(details):
        code_s = "per_day_quota"
    param = _text(err.get("param"))
    return message, etype.lower(), code_s.lower(), param.lower()


def is_logprob_refusal(status: int, payload: Any) -> bool:
    """A model saying it will not give logprobs (400 unsupported_parameter, 403 not allowed, Gemini 400)."""
    if status not in (400, 403, 422):
        return False
    message, _etype, code, param = error_fields(error_object(payload))
    if param in ("logprobs", "top_logprobs", "responselogprobs", "generationconfig.logprobs"):
        return True
    return bool(_LOGPROB_REFUSAL.search(message)) or (code == "unsupported_parameter" and "logprob" in message.lower())


_TOKEN_FIELD = re.compile(r"(?i)unsupported parameter:?\s*[`'\"]?(max_tokens|max_completion_tokens)\b")
_SAMPLING_PARAMS = ("temperature", "top_p")
_REJECTION_WORDS = ("deprecated", "not supported", "unsupported", "does not support", "not allowed",
                    "is not available")


def rejected_sampling_params(status: int, payload: Any) -> tuple[str, ...]:
    """Sampling parameters a 400 says the model rejects (``temperature``/``top_p``), if any.

    ``temperature and top_p cannot both be specified`` rejects top_p (temperature is kept).
    """
    if status not in (400, 422):
        return ()
    message, _etype, code, param = error_fields(error_object(payload))
    low = message.lower()
    if "cannot both be specified" in low and "top_p" in low:
        return ("top_p",)
    if param in _SAMPLING_PARAMS and (code in ("unsupported_parameter", "unsupported_value") or "support" in low):
        return (param,)
    found = []
    for name in _SAMPLING_PARAMS:
        quoted = f"`{name}`" in low or f"'{name}'" in low or f'"{name}"' in low
        if quoted and any(w in low for w in _REJECTION_WORDS):
            found.append(name)
    return tuple(found)


def rejected_token_field(status: int, payload: Any) -> str | None:
    """``max_tokens`` or ``max_completion_tokens`` when a 400 says the model does not take that name."""
    if status not in (400, 422):
        return None
    message, _etype, _code, param = error_fields(error_object(payload))
    if param in ("max_tokens", "max_completion_tokens"):
        return param
    m = _TOKEN_FIELD.search(message)
    return m.group(1) if m else None


def _kind_for(status: int, message: str, etype: str, code: str) -> ErrorKind:
    low = message.lower()
    if code in _QUOTA_CODES or etype in _QUOTA_CODES or status == 402 or code == "per_day_quota":
        return "quota"
    if code in _REFUSAL_CODES or etype in _REFUSAL_CODES or "content management policy" in low:
        return "refusal"
    if etype == "overloaded_error" or status in (503, 529):
        return "overloaded"
    if status == 429 or etype in ("rate_limit_error", "resource_exhausted") or code == "rate_limit_exceeded":
        if "quota" in low and ("per day" in low or "billing" in low):
            return "quota"
        return "rate_limit"
    if status in (401,) or etype in ("authentication_error", "unauthenticated"):
        return "auth"
    if status == 403:
        if "moderation" in low or "flagged" in low or "guardrail" in low:
            return "refusal"
        return "auth"
    if status in (408, 409, 425) or etype in ("timeout_error", "deadline_exceeded"):
        return "transient"
    if status >= 500:
        # llama-cpp-python answers request validation errors with 500: retrying cannot help.
        if "validation error" in low and ("loc" in low or "input should" in low):
            return "bad_request"
        return "transient"
    if 400 <= status < 500:
        return "bad_request"
    return "malformed"


def _status_from_code(code: str) -> int | None:
    return int(code) if code.isdigit() and 100 <= int(code) <= 599 else None


def classify_http_error(status: int, headers: Mapping[str, str], body: bytes | str | None, *,
                        redact: Redact, now: float | None = None, hint: str = "") -> CallFailure:
    """Classify an HTTP error response (status ≥ 400, or a 200 whose body is an error)."""
    payload = parse_body(body)
    err = error_object(payload)
    message, etype, code, _param = error_fields(err)
    effective = status
    if status < 400:  # a 200 carrying an error (OpenRouter, Anthropic): its own code decides
        effective = _status_from_code(code) or {"overloaded_error": 529, "rate_limit_error": 429,
                                                "api_error": 500, "authentication_error": 401,
                                                "permission_error": 403}.get(etype, 500)
    kind = _kind_for(effective, message, etype, code)
    retry_after = None
    if kind in ("rate_limit", "overloaded", "transient"):
        retry_after = retry_after_from_headers(headers, now)
        if retry_after is None and err is not None:
            retry_after = retry_after_from_body(err)
    if not message:
        raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
        message = raw.strip()[:200] or "(empty body)"
    label = " ".join(x for x in (etype, code) if x)
    text = f"HTTP {status}" + (f" [{label}]" if label else "") + f": {message}"
    if kind == "auth" and hint:
        text += f" ({hint})"
    return CallFailure(kind=kind, message=redact(_clip(text)), status_code=status, retry_after=retry_after)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def failure(kind: ErrorKind, message: str, *, redact: Redact, status_code: int | None = None,
            retry_after: float | None = None) -> CallFailure:
    """A CallFailure whose message is redacted and clipped."""
    return CallFailure(kind=kind, message=redact(_clip(message)), status_code=status_code,
                       retry_after=retry_after)


def success_payload(status: int, headers: Mapping[str, str], body: bytes, *, result_key: str, redact: Redact,
                    hint: str = "") -> Any:
    """A 2xx body parsed as JSON. Raises ProviderError: ``malformed`` when it is not JSON, and the
    classified failure when it is an error object instead of a result (``result_key`` absent): some
    hosts answer 200 with an error body (OpenRouter, Anthropic)."""
    try:
        payload = jsonio.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ProviderError(failure("malformed", f"HTTP {status}: body is not JSON ({len(body)} bytes)",
                                    redact=redact, status_code=status)) from None
    if isinstance(payload, dict) and (payload.get("type") == "error" or (
            result_key not in payload and error_object(payload) is not None)):
        raise ProviderError(classify_http_error(status, headers, body, redact=redact, hint=hint))
    return payload
