"""The pure pieces of batch mode: custom ids, splitting, reading the vendors' documented result lines,
prices and the cost estimate, which models may use a batch engine, and the SQLite bookkeeping."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from probe.batch import BatchStore, batch_models_for, estimate_costs
from probe.batch.split import custom_id_for, split_sizes
from probe.batch.store import RequestRow
from probe.completion import CallFailure
from probe.errors import UsageError
from probe.hashing import versioned_hash
from probe.runner.run import CostLine
from probe.runner.spec import validate_spec
from probe.storage import Store
from providers.batch_anthropic import ANTHROPIC_LIMITS, read_anthropic_line
from providers.batch_base import CUSTOM_ID, BatchInfo, BatchLimits
from providers.batch_openai import OPENAI_LIMITS, read_openai_line
from providers.normalize import MalformedPayload
from providers.prices import price_for


def _redact(text: str) -> str:
    return text.replace("sk-secret", "[redacted]")


# -- custom ids and splitting ----------------------------------------------------------------------
def test_custom_id_is_the_key_hex_and_valid() -> None:
    key = versioned_hash({"x": 1}, tag="k1")
    cid = custom_id_for(key)
    assert key == "k1:" + cid and CUSTOM_ID.match(cid) and len(cid) == 64
    odd = custom_id_for("weird key/with:üñíçødé and more than sixty-four characters " * 3)
    assert CUSTOM_ID.match(odd) and len(odd) == 64


def test_vendor_limits_are_the_documented_ones() -> None:
    assert (OPENAI_LIMITS.max_requests, OPENAI_LIMITS.max_bytes) == (50_000, 200_000_000)
    assert (ANTHROPIC_LIMITS.max_requests, ANTHROPIC_LIMITS.max_bytes) == (100_000, 256_000_000)


def test_split_by_request_count() -> None:
    chunks, big = split_sizes([10] * 120_001, BatchLimits(max_requests=50_000, max_bytes=10**12))
    assert [len(c) for c in chunks] == [50_000, 50_000, 20_001] and not big
    assert [c[0] for c in chunks] == [0, 50_000, 100_000]


def test_split_by_bytes_with_envelope_and_too_large_entries() -> None:
    sizes = [40, 40, 40, 200, 40, 30, 30]
    chunks, big = split_sizes(sizes, BatchLimits(max_requests=100, max_bytes=100), envelope=15)
    assert big == [3]
    assert chunks == [[0, 1], [2, 4], [5, 6]]  # the too-large entry is left out, not a batch boundary
    for c in chunks:
        assert 15 + sum(sizes[i] for i in c) <= 100


# -- OpenAI result lines (providers.md §12.1) ---------------------------------------------------------
OPENAI_OK = {"id": "batch_req_wnaDys", "custom_id": "request-2", "response": {
    "status_code": 200, "request_id": "req_c187b3", "body": {
        "id": "chatcmpl-abc", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"},
                     "logprobs": {"content": [{"token": "4", "logprob": -0.0001, "bytes": [52], "top_logprobs": []}],
                                  "refusal": None}, "finish_reason": "stop"}]}}, "error": None}
META = {"requested": True, "sent": True, "top_k": 3, "trim_to": None, "reason": "provider_has_none",
        "params": ["temperature"], "dropped": []}


def test_openai_success_line_reads_like_a_live_body() -> None:
    out = read_openai_line("request-2", OPENAI_OK, META, redact=_redact)
    assert out.failure is None and out.completion is not None
    choice = out.completion.first
    assert choice.text == "4" and choice.logprob_state == "partial"  # asked for 3 alternatives, got none
    assert choice.tokens is not None and math.isclose(choice.tokens[0].logprob or 0, -0.0001)
    assert out.completion.model_reported == "gpt-4o-mini" and out.completion.latency_s == 0.0


def test_openai_error_lines() -> None:
    expired = {"id": "x", "custom_id": "c", "response": None,
               "error": {"code": "batch_expired", "message": "This request could not be executed before the "
                                                            "completion window expired."}}
    out = read_openai_line("c", expired, META, redact=_redact)
    assert out.failure is not None and out.failure.kind == "expired" and "batch_expired" in out.failure.message
    cancelled = {"custom_id": "c", "response": None, "error": {"code": "batch_cancelled", "message": "cancelled"}}
    assert read_openai_line("c", cancelled, META, redact=_redact).failure.kind == "canceled"  # type: ignore[union-attr]
    limited = {"custom_id": "c", "error": None, "response": {"status_code": 429, "body": {"error": {
        "message": "Rate limit reached (key sk-secret)", "type": "tokens", "param": None,
        "code": "rate_limit_exceeded"}}}}
    fail = read_openai_line("c", limited, META, redact=_redact).failure
    assert fail is not None and fail.kind == "rate_limit" and fail.status_code == 429
    assert "sk-secret" not in fail.message and "[redacted]" in fail.message


def test_openai_refusals_are_learned_only_when_sent() -> None:
    refusal = {"custom_id": "c", "error": None, "response": {"status_code": 400, "body": {"error": {
        "message": "Unsupported parameter: 'logprobs' is not supported with this model.", "type":
        "invalid_request_error", "param": "logprobs", "code": "unsupported_parameter"}}}}
    assert read_openai_line("c", refusal, META, redact=_redact).logprobs_refused
    unsent = read_openai_line("c", refusal, {**META, "sent": False}, redact=_redact)
    assert not unsent.relearn and unsent.failure is not None and unsent.failure.kind == "bad_request"
    temp = {"custom_id": "c", "error": None, "response": {"status_code": 400, "body": {"error": {
        "message": "Unsupported value: 'temperature' does not support 0 with this model.", "type":
        "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}}}
    assert read_openai_line("c", temp, META, redact=_redact).rejected_params == ("temperature",)
    again = read_openai_line("c", temp, {**META, "dropped": ["temperature"]}, redact=_redact)
    assert not again.relearn and again.failure is not None


def test_openai_unreadable_lines() -> None:
    with pytest.raises(MalformedPayload):
        read_openai_line("c", {"custom_id": "c"}, META, redact=_redact)
    bad_body = {"custom_id": "c", "response": {"status_code": 200, "body": {"choices": []}}}
    fail = read_openai_line("c", bad_body, META, redact=_redact).failure
    assert fail is not None and fail.kind == "malformed"


# -- Anthropic result lines (providers.md §12.2) ------------------------------------------------------
def test_anthropic_lines() -> None:
    meta = {"logprobs_requested": True, "params": ["temperature"], "dropped": []}
    ok = {"custom_id": "my-second-request", "result": {"type": "succeeded", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hello!"}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 11, "output_tokens": 5}}}}
    out = read_anthropic_line("my-second-request", ok, meta, redact=_redact)
    assert out.completion is not None and out.completion.text == "Hello!"
    assert out.completion.first.logprob_reason == "provider_has_none"
    assert (out.completion.usage.input_tokens, out.completion.usage.output_tokens) == (11, 5)
    errored = {"custom_id": "my-first-request", "result": {"type": "errored", "error": {
        "type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: field required"},
        "request_id": "req_1"}}}
    fail = read_anthropic_line("my-first-request", errored, meta, redact=_redact).failure
    assert fail is not None and fail.kind == "bad_request"
    assert fail.message == "batch line errored [invalid_request_error]: max_tokens: field required"
    overloaded = {"custom_id": "c", "result": {"type": "errored", "error": {
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}}
    assert read_anthropic_line("c", overloaded, meta, redact=_redact).failure.kind == "overloaded"  # type: ignore[union-attr]
    for kind in ("expired", "canceled"):
        line = {"custom_id": "c", "result": {"type": kind}}
        assert read_anthropic_line("c", line, meta, redact=_redact).failure.kind == kind  # type: ignore[union-attr]
    with pytest.raises(MalformedPayload):
        read_anthropic_line("c", {"custom_id": "c", "result": {"type": "weird"}}, meta, redact=_redact)


# -- prices, costs, which models --------------------------------------------------------------------
def test_price_matching() -> None:
    assert price_for("openai", "gpt-4o-mini").input_per_mtok == 0.15  # type: ignore[union-attr]
    assert price_for("openai", "gpt-4o-mini-2024-07-18").model == "gpt-4o-mini"  # type: ignore[union-attr]
    assert price_for("openai", "gpt-4o").model == "gpt-4o"  # type: ignore[union-attr]
    assert price_for("anthropic", "claude-sonnet-4-5-20250929").model == "claude-sonnet-4-5"  # type: ignore[union-attr]
    assert price_for("anthropic", "claude-opus-4-1-20250805").output_per_mtok == 75.0  # type: ignore[union-attr]
    for provider, model in (("openai", "gpt-5.4"), ("openai", "gpt-4o-mini-tts"), ("anthropic", "claude-sonnet-4-7"),
                            ("vllm", "gpt-4o"), ("openai", "my-finetune")):
        assert price_for(provider, model) is None


def test_cost_estimate_batch_is_half_and_unknown_models_show_tokens_only() -> None:
    lines = [CostLine(model="openai/gpt-4o-mini", source="token", calls=10, input_tokens=1_000_000, output_tokens=0),
             CostLine(model="openai/gpt-4o-mini", source="verbal", calls=20, input_tokens=0, output_tokens=1_000_000),
             CostLine(model="sim/calibrated", source="token", calls=10, input_tokens=5000, output_tokens=50),
             CostLine(model="vllm/gpt-4o", source="token", calls=1, input_tokens=10, output_tokens=1)]
    est = {e.model: e for e in estimate_costs(lines)}
    mini = est["openai/gpt-4o-mini"]
    assert (mini.calls, mini.input_tokens, mini.output_tokens) == (30, 1_000_000, 1_000_000)
    assert mini.live_usd is not None and math.isclose(mini.live_usd, 0.15 + 0.60)
    assert mini.batch_usd is not None and math.isclose(mini.batch_usd, (0.15 + 0.60) / 2)
    assert "2026-03" in mini.note
    sim = est["sim/calibrated"]
    assert sim.live_usd is None and sim.batch_usd is None and not sim.batch_engine and "tokens only" in sim.note
    assert est["vllm/gpt-4o"].live_usd is None


def test_which_models_go_through_a_batch_engine() -> None:
    spec = validate_spec({"suites": ["demo"], "models": [
        {"model": "openai/gpt-4o-mini", "batch": True}, "anthropic/claude-haiku-4-5", "sim/calibrated"]}, "t")
    assert batch_models_for(spec, False) == ["openai/gpt-4o-mini"]
    with pytest.raises(UsageError, match="sim/calibrated cannot go through a batch engine"):
        batch_models_for(spec, True)
    only = validate_spec({"suites": ["demo"], "models": ["openai/gpt-4o-mini"], "refresh": True}, "t")
    assert batch_models_for(only, False) == []
    with pytest.raises(UsageError, match="--refresh"):
        batch_models_for(only, True)


# -- bookkeeping ---------------------------------------------------------------------------------------
def test_latest_request_row_decides_failures_in_flight_and_retire(tmp_path: Path) -> None:
    bs = BatchStore(Store(tmp_path / "b.db"))
    rows = [RequestRow(custom_id=f"c{i}", cache_key=f"k{i}", meta={}) for i in range(3)]
    bs.add_batch("pb_1", "run1", "openai/m", "openai", 1, 100, rows, {})
    assert bs.in_flight_keys("run1") == {"k0", "k1", "k2"}
    bs.confirm("pb_1", BatchInfo(batch_id="batch_1", vendor_status="validating", ended=False))
    bs.set_outcomes("pb_1", [("c0", "ok", None)])
    n = bs.fail_unanswered("pb_1", CallFailure(kind="expired", message="gone"))
    assert n == 2 and bs.outcome_counts("pb_1") == {"ok": 1, "error:expired": 2}
    bs.update("pb_1", BatchInfo(batch_id="batch_1", vendor_status="expired", ended=True), state="collected")
    assert bs.in_flight_keys("run1") == set()
    assert set(bs.failures("run1")) == {"k1", "k2"} and bs.failures("other") == {}
    # k1 goes out again: its newest row is in flight, so it is no longer a known failure
    bs.add_batch("pb_2", "run1", "openai/m", "openai", 2, 10, [RequestRow(custom_id="c1", cache_key="k1", meta={})],
                 {})
    assert set(bs.failures("run1")) == {"k2"} and bs.in_flight_keys("run1") == {"k1"}
    bs.abandon("pb_2", "cut off")
    assert set(bs.failures("run1")) == {"k1", "k2"} and bs.in_flight_keys("run1") == set()
    assert bs.retire_failures("run1") == 2 and bs.failures("run1") == {}
    assert bs.next_stage("run1") == 2
    bs.learn("run1", "openai/m", logprobs_refused=False, dropped=["temperature"])
    bs.learn("run1", "openai/m", logprobs_refused=True, dropped=["top_p", "temperature"])
    assert bs.learned("run1", "openai/m") == (True, ("temperature", "top_p"))
    assert bs.register_run("run1", ["openai/m"]) == ["openai/m"]
    assert bs.register_run("run1", ["anthropic/x", "openai/m"]) == ["openai/m", "anthropic/x"]
