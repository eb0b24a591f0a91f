"""Pure error classification: every family's error body, delays from headers and bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from probe.completion import ErrorKind
from providers.errors import (
    classify_http_error,
    go_duration_seconds,
    is_logprob_refusal,
    rejected_sampling_params,
    retry_after_from_headers,
)
from providers.redact import Redactor
from tests.providers import payloads as P
from tests.providers.conftest import FIXTURES

NOW = 1_750_000_000.0
R = Redactor()


def _classify(status: int, body: Any, headers: dict[str, str] | None = None) -> tuple[ErrorKind, float | None]:
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    f = classify_http_error(status, headers or {}, raw, redact=R, now=NOW)
    return f.kind, f.retry_after


@pytest.mark.parametrize(("status", "body", "headers", "kind", "after"), [
    (429, P.OPENAI_429, {"retry-after": "20"}, "rate_limit", 20.0),
    (429, P.OPENAI_429, {}, "rate_limit", 20.0),  # "Please try again in 20s" in the message
    (429, P.OPENAI_429, {"retry-after-ms": "125", "retry-after": "20"}, "rate_limit", 0.125),
    (429, P.OPENAI_429, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
                         "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "1s"}, "rate_limit", 360.0),
    (429, P.OPENAI_QUOTA, {}, "quota", None),
    (401, P.OPENAI_401, {}, "auth", None),
    (400, P.OPENAI_LOGPROBS_400, {}, "bad_request", None),
    (403, P.OPENAI_LOGPROBS_403, {}, "auth", None),
    (400, P.VLLM_400, {}, "bad_request", None),
    (400, P.VLLM_OLD_400, {}, "bad_request", None),
    (429, P.AZURE_429, {}, "rate_limit", 7.0),
    (429, P.AZURE_429, {"Retry-After": "3"}, "rate_limit", 3.0),
    (400, P.AZURE_CONTENT_FILTER, {}, "refusal", None),
    (529, P.ANTHROPIC_529, {}, "overloaded", None),
    (429, P.ANTHROPIC_429, {"retry-after": "12"}, "rate_limit", 12.0),
    (429, P.ANTHROPIC_429, {"anthropic-ratelimit-input-tokens-remaining": "0",
                            "anthropic-ratelimit-input-tokens-reset": "2025-06-15T15:07:10Z"}, "rate_limit", 30.0),
    (429, P.ANTHROPIC_SPEND, {}, "quota", None),
    (200, P.ANTHROPIC_529, {}, "overloaded", None),  # a 200 whose body is an error
    (400, P.GEMINI_LOGPROBS_400, {}, "bad_request", None),
    (429, P.GEMINI_429, {}, "rate_limit", 47.0),  # RetryInfo.retryDelay, not the message's 38.9 s
    (429, P.GEMINI_429_DAILY, {}, "quota", None),
    (503, P.GEMINI_503, {}, "overloaded", None),
    (200, P.OPENROUTER_200_ERROR, {}, "transient", None),
    (402, P.OPENROUTER_402, {}, "quota", None),
    (403, P.OPENROUTER_403_MODERATION, {}, "refusal", None),
    (500, "Internal Server Error", {}, "transient", None),
    (502, b"<html>bad gateway</html>", {}, "transient", None),
    (408, {"error": {"message": "timeout"}}, {}, "transient", None),
    (404, {"detail": "Not Found"}, {}, "bad_request", None),
    (401, {"detail": "Invalid API key"}, {}, "auth", None),
    (503, {"error": {"code": 503, "message": "No available model provider that meets your routing requirements"}},
     {"Retry-After": "Sun, 15 Jun 2025 15:06:50 GMT"}, "overloaded", 10.0),
])
def test_classification(status: int, body: Any, headers: dict[str, str], kind: str, after: float | None) -> None:
    got_kind, got_after = _classify(status, body, headers)
    assert got_kind == kind
    assert got_after == pytest.approx(after) if after is not None else got_after is None


def test_llama_fixture_errors() -> None:
    lcp = FIXTURES / "llama-cpp-python-0.3.36"
    srv = FIXTURES / "llama-server"
    assert _classify(500, (lcp / "invalid_messages_type.json").read_text())[0] == "bad_request"
    assert _classify(500, (lcp / "invalid_malformed_json.json").read_text())[0] == "transient"
    assert _classify(400, (lcp / "invalid_context_overflow.json").read_text())[0] == "bad_request"
    assert _classify(401, '{"detail":"Invalid API key"}')[0] == "auth"
    assert _classify(400, (srv / "invalid_missing_messages.json").read_text())[0] == "bad_request"
    assert _classify(400, (srv / "invalid_context_overflow.json").read_text())[0] == "bad_request"
    assert _classify(500, (srv / "invalid_malformed_json.json").read_text())[0] == "transient"
    assert _classify(404, (srv / "invalid_unknown_path.json").read_text())[0] == "bad_request"


def test_message_names_status_type_and_hint() -> None:
    f = classify_http_error(401, {}, json.dumps(P.OPENAI_401), redact=R, hint="check OPENAI_API_KEY")
    assert f.message.startswith("HTTP 401 [invalid_request_error invalid_api_key]: Incorrect API key")
    assert f.message.endswith("(check OPENAI_API_KEY)") and f.status_code == 401
    long = classify_http_error(500, {}, "x" * 5000, redact=R)
    assert len(long.message) <= 400


@pytest.mark.parametrize(("status", "body", "refused"), [
    (400, P.OPENAI_LOGPROBS_400, True), (403, P.OPENAI_LOGPROBS_403, True),
    (400, P.GEMINI_LOGPROBS_400, True), (400, P.GEMINI_LOGPROBS_400_SUPPORTED, True),
    (400, {"error": {"message": "`logprobs` is not supported with this model", "type": "invalid_request_error"}}, True),
    (400, {"error": {"message": "Unrecognized request argument supplied: logprobs"}}, True),
    (400, {"error": {"message": "This model does not support the 'logprobs' parameter."}}, True),
    (400, P.VLLM_400, False), (401, P.OPENAI_401, False), (429, P.OPENAI_429, False),
    (403, {"error": {"message": "Project does not have access to model"}}, False),
])
def test_logprob_refusal_detection(status: int, body: Any, refused: bool) -> None:
    assert is_logprob_refusal(status, body) is refused


def test_rejected_sampling_params() -> None:
    assert rejected_sampling_params(400, P.OPENAI_TEMPERATURE_400) == ("temperature",)
    assert rejected_sampling_params(400, P.ANTHROPIC_TEMPERATURE_400) == ("temperature",)
    assert rejected_sampling_params(400, P.ANTHROPIC_BOTH_400) == ("top_p",)
    assert rejected_sampling_params(400, {"error": {"message": "Unsupported parameter: 'top_p' is not supported with "
                                                               "this model.", "param": "top_p",
                                                    "code": "unsupported_parameter"}}) == ("top_p",)
    assert rejected_sampling_params(400, P.VLLM_400) == ()
    assert rejected_sampling_params(500, P.OPENAI_TEMPERATURE_400) == ()


def test_go_durations_and_header_precedence() -> None:
    assert go_duration_seconds("6m0s") == 360.0
    assert go_duration_seconds("12ms") == pytest.approx(0.012)
    assert go_duration_seconds("1h2m3.5s") == pytest.approx(3723.5)
    assert go_duration_seconds("2.5") == 2.5
    assert go_duration_seconds("soon") is None
    assert retry_after_from_headers({"Retry-After-Ms": "1500"}, NOW) == 1.5
    assert retry_after_from_headers({"retry-after": "garbage"}, NOW) is None
    assert retry_after_from_headers({"x-ratelimit-reset-requests": "1s"}, NOW) is None  # remaining not 0


def test_redactor_masks_keys_and_credential_shapes() -> None:
    r = Redactor(["sk-live-123456", None, "ab"])
    assert r("key sk-live-123456 here") == "key [redacted] here"
    assert r("Authorization: Bearer abcdefghijkl") == "Authorization: [redacted]"
    assert r("{'authorization': 'Bearer zzzzzzzzzzzz', 'x': 1}") == "{'authorization': '[redacted]', 'x': 1}"
    assert r("headers api-key: q1w2e3r4t5 and x-api-key=QQQQQQQQ") == "headers api-key: [redacted] and x-api-key=[redacted]"
    assert r("GET /v1beta/models/m:generateContent?key=AIzaSyXXXX&alt=json") == (
        "GET /v1beta/models/m:generateContent?key=[redacted]&alt=json")
    assert r("x-goog-api-key: AIzaSyYYYY") == "x-goog-api-key: [redacted]"
    assert r("ab is too short to be a secret") == "ab is too short to be a secret"
    assert "secrets" in repr(r) and "sk-live" not in repr(r)
