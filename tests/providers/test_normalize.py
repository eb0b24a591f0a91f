"""Pure normalization rules: placeholders, bytes, text rebuilding, trimming, states."""

from __future__ import annotations

import math

import pytest

from providers.normalize import (
    MalformedPayload,
    TokenDict,
    clean_bytes,
    clean_logprob,
    logprob_state,
    make_token,
    make_top,
    text_from_tokens,
    trim_past_text,
)


@pytest.mark.parametrize(("raw", "expected"), [
    (-0.5, -0.5), (0, 0.0), (0.0, 0.0), (-9998.9, -9998.9), (1e-7, 0.0),
    (None, None), (-9999.0, None), (-9999, None), (-1e30, None), (-3.4028234663852886e38, None),
    (-math.inf, None), (math.nan, None), (math.inf, None), (0.7, None),
])
def test_clean_logprob(raw: float | None, expected: float | None) -> None:
    assert clean_logprob(raw) == expected


@pytest.mark.parametrize("raw", ["-1", True, [1.0], {}])
def test_clean_logprob_rejects_non_numbers(raw: object) -> None:
    with pytest.raises(MalformedPayload):
        clean_logprob(raw)


def test_clean_bytes() -> None:
    assert clean_bytes(None) is None
    assert clean_bytes([32, 65]) == [32, 65]
    assert clean_bytes([239, 191, 189]) is None  # U+FFFD from errors="replace": true bytes unknown
    assert clean_bytes([]) == []
    for bad in ([256], [-1], ["a"], "ab", [1.5], (32,)):
        with pytest.raises(MalformedPayload):
            clean_bytes(bad)


def _tok(token: str, raw: bytes | None = None, lp: float | None = -0.1) -> TokenDict:
    return make_token(token, lp, list(raw) if raw is not None else None, None, [])


def test_text_from_split_utf8_bytes() -> None:
    tokens = [_tok("", b"\xf0\x9f"), _tok("", b"\x8c\x8d"), _tok(" ok")]
    assert text_from_tokens(tokens) == "🌍 ok"


def test_trim_past_text_only_when_tokens_extend_the_text() -> None:
    tokens = [_tok(" A"), _tok(" A"), _tok(" B")]
    assert len(trim_past_text(tokens, " A")) == 1
    assert len(trim_past_text(tokens, "")) == 0
    assert len(trim_past_text(tokens, " A A B")) == 3
    assert len(trim_past_text(tokens, "other")) == 3


def test_state_names_what_is_missing() -> None:
    full = make_token("a", -0.1, None, None, [make_top("a", -0.1), make_top("b", -2.0)])
    hole = make_token("b", None, None, None, [make_top("b", None)])
    bare = make_token("c", -0.3, None, None, [])
    assert logprob_state([full], 2) == ("available", None)
    state, reason = logprob_state([full, hole, bare], 2)
    assert state == "partial"
    assert reason == ("token logprob missing at positions 1; alternative logprobs missing at positions 1; "
                      "no alternatives at positions 2 (asked for 2)")
    assert logprob_state([bare], 0) == ("available", None)
    many = [make_token("x", None, None, None, [])] * 12
    assert "… (12 in all)" in (logprob_state(many, None)[1] or "")
