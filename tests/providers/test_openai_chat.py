"""Pure Chat Completions converters: requests per host profile, every payload quirk, and the SDK agreeing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probe.completion import ChatRequest, Completion, Message
from providers.hosts import PROFILES
from providers.normalize import MalformedPayload
from providers.openai_chat import LogprobAsk, chat_request_to_openai, completion_from_openai, logprob_ask
from tests.providers import payloads as P
from tests.providers.conftest import FIXTURES
from tests.providers.sdkcheck import LENIENT, sdk_view

ASK5 = LogprobAsk(requested=True, sent=True, top_k=5)
ASK3 = LogprobAsk(requested=True, sent=True, top_k=3)
REQ = ChatRequest(messages=(Message(role="system", content="Be brief."), Message(role="user", content="A or B?")),
                  max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=5, seed=3, stop=("\n",))


def _fixture_payloads() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for folder in sorted(FIXTURES.iterdir()):
        index = json.loads((folder / "index.json").read_text())
        for name, entry in index.items():
            path = folder / Path(entry["file"]).name
            if entry["status"] != 200 or path.suffix != ".json" or name == "models":
                continue
            payload = json.loads(path.read_text())
            if "choices" in payload:
                out.append((f"{folder.name}/{name}", payload))
    return out


HANDWRITTEN = {
    "openai_equivalent": P.OPENAI_EQUIVALENT, "llama_server_equivalent": P.LLAMA_SERVER_EQUIVALENT,
    "together": P.TOGETHER_EQUIVALENT, "openai_sentinel": P.OPENAI_SENTINEL, "vllm_replacement": P.VLLM_REPLACEMENT,
    "llamacpp_split_utf8": P.LLAMACPP_SPLIT_UTF8, "deepseek_escaped": P.DEEPSEEK_ESCAPED,
    "ollama_no_top_key": P.OLLAMA_NO_TOP_KEY, "ollama_silent_drop": P.OLLAMA_SILENT_DROP,
    "openrouter_bytes_null": P.OPENROUTER_BYTES_NULL, "fireworks": P.FIREWORKS_NEW_LOGPROBS,
    "openai_refusal": P.OPENAI_REFUSAL_MESSAGE, "legacy_completion": P.LEGACY_COMPLETION,
}
ALL_PAYLOADS = _fixture_payloads() + sorted(HANDWRITTEN.items())


def test_every_fixture_folder_contributes() -> None:
    names = [n for n, _ in _fixture_payloads()]
    assert sum(n.startswith("llama-server/") for n in names) >= 10
    assert sum(n.startswith("llama-cpp-python") for n in names) >= 10


@pytest.mark.parametrize(("name", "payload"), ALL_PAYLOADS, ids=[n for n, _ in ALL_PAYLOADS])
def test_converter_agrees_with_the_openai_sdk_on_every_token(name: str, payload: dict[str, Any]) -> None:
    ours = completion_from_openai(payload, LogprobAsk(requested=True, sent=True, top_k=None))
    LENIENT.clear()
    theirs = sdk_view(payload)
    # strict SDK validation holds except for two documented host quirks
    assert bool(LENIENT) == (name in {"llama-cpp-python-0.3.36/completions_logprobs5_echo", "ollama_no_top_key"})
    assert len(ours.choices) == len(theirs)
    for choice, sdk_tokens in zip(ours.choices, theirs, strict=True):
        if sdk_tokens is None:
            assert choice.tokens is None and choice.logprob_state == "unavailable"
            continue
        assert choice.tokens is not None
        mine = [(t.token, t.logprob, tuple((a.token, a.logprob) for a in t.top)) for t in choice.tokens]
        # a stop string can leave tokens listed past the text: ours drops them, the SDK keeps them
        assert mine == sdk_tokens[: len(mine)], name
        if len(mine) < len(sdk_tokens):
            assert choice.finish_reason == "stop"


def test_request_body_openai() -> None:
    ask, top = logprob_ask(REQ, PROFILES["openai"], refused=False)
    body = chat_request_to_openai(REQ, PROFILES["openai"], model="gpt-4o-mini", top_logprobs=top)
    assert body == {"model": "gpt-4o-mini",
                    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A or B?"}],
                    "max_completion_tokens": 1, "temperature": 0.0, "seed": 3, "stop": ["\n"],
                    "logprobs": True, "top_logprobs": 5}
    assert ask == LogprobAsk(requested=True, sent=True, top_k=5)


def test_request_body_together_sends_integer_logprobs() -> None:
    _, top = logprob_ask(REQ, PROFILES["together"], refused=False)
    body = chat_request_to_openai(REQ, PROFILES["together"], model="m", top_logprobs=top)
    assert body["logprobs"] == 5 and "top_logprobs" not in body and body["max_tokens"] == 1


def test_request_llamacpp_always_sends_top_logprobs() -> None:
    req = REQ.model_copy(update={"top_logprobs": None})
    ask, top = logprob_ask(req, PROFILES["llamacpp"], refused=False)
    body = chat_request_to_openai(req, PROFILES["llamacpp"], model="tiny", top_logprobs=top)
    assert body["logprobs"] is True and body["top_logprobs"] == 1
    assert ask.trim_to == 0  # the one alternative it forces is cut back off


def test_request_fireworks_caps_top_k_and_openrouter_requires_parameters() -> None:
    req = REQ.model_copy(update={"top_logprobs": 20})
    ask, top = logprob_ask(req, PROFILES["fireworks"], refused=False)
    assert top == 5 and ask.top_k == 5
    _, top = logprob_ask(req, PROFILES["openrouter"], refused=False)
    body = chat_request_to_openai(req, PROFILES["openrouter"], model="x", top_logprobs=top)
    assert body["provider"] == {"require_parameters": True} and body["top_logprobs"] == 20


@pytest.mark.parametrize("name", ["groq", "mistral"])
def test_hosts_without_logprobs_never_send_them(name: str) -> None:
    ask, top = logprob_ask(REQ, PROFILES[name], refused=False)
    body = chat_request_to_openai(REQ, PROFILES[name], model="m", top_logprobs=top)
    assert top is None and "logprobs" not in body and "top_logprobs" not in body
    c = completion_from_openai(P.OLLAMA_SILENT_DROP, ask)
    assert (c.first.logprob_state, c.first.logprob_reason) == ("unavailable", "provider_has_none")


def test_dropped_sampling_params_are_not_sent() -> None:
    body = chat_request_to_openai(REQ.model_copy(update={"top_p": 0.9}), PROFILES["openai"], model="m",
                                  top_logprobs=None, drop=("temperature",))
    assert "temperature" not in body and body["top_p"] == 0.9 and "logprobs" not in body


def test_leading_spaces_kept_and_sentinels_become_missing() -> None:
    c = completion_from_openai(P.OPENAI_SENTINEL, ASK5)
    ch = c.first
    assert ch.tokens is not None
    assert [t.token for t in ch.tokens] == [" How", " there"]
    assert ch.tokens[1].logprob is None  # -9999 is a placeholder, never a probability
    assert ch.tokens[0].top[1].token == "<|end|>" and ch.tokens[0].top[1].logprob is None
    assert ch.tokens[0].top[1].bytes is None
    assert ch.logprob_state == "partial"
    assert ch.logprob_reason is not None
    assert "token logprob missing at positions 1" in ch.logprob_reason
    assert "alternative logprobs missing at positions 0" in ch.logprob_reason
    assert "no alternatives at positions 1" in ch.logprob_reason
    assert c.model_reported == "gpt-4o-mini-2024-07-18"
    assert (c.usage.input_tokens, c.usage.output_tokens) == (5, 2)


def test_vllm_replacement_bytes_are_unknown_and_text_comes_from_the_message() -> None:
    ch = completion_from_openai(P.VLLM_REPLACEMENT, ASK5).first
    assert ch.tokens is not None
    assert [t.bytes for t in ch.tokens] == [None, None, (32, 65)]
    assert [t.token for t in ch.tokens] == ["�", "�", " A"]
    assert ch.text == "🌍 A"


def test_text_rebuilt_from_bytes_when_the_api_gives_no_text() -> None:
    ch = completion_from_openai(P.LLAMACPP_SPLIT_UTF8, ASK5).first
    assert ch.text == "🌍"  # the token strings are empty (UTF-8-truncated); the bytes join up
    assert ch.tokens is not None and [t.id for t in ch.tokens] == [1, 2]


def test_deepseek_escaped_tokens_kept_as_sent_with_true_bytes() -> None:
    ch = completion_from_openai(P.DEEPSEEK_ESCAPED, ASK5).first
    assert ch.tokens is not None
    assert ch.tokens[0].token == "\\xf0\\x9f\\x8c" and ch.tokens[0].bytes == (240, 159, 140)
    assert ch.text == "🌍"


def test_missing_top_logprobs_key_with_top_k_zero_is_available() -> None:
    ch = completion_from_openai(P.OLLAMA_NO_TOP_KEY, LogprobAsk(requested=True, sent=True, top_k=0)).first
    assert ch.logprob_state == "available" and ch.tokens is not None and ch.tokens[0].top == ()
    ch = completion_from_openai(P.OLLAMA_NO_TOP_KEY, ASK5).first
    assert ch.logprob_state == "partial" and "no alternatives at positions 0" in (ch.logprob_reason or "")


def test_accepted_but_no_logprobs_is_endpoint_dropped_never_certainty() -> None:
    ch = completion_from_openai(P.OLLAMA_SILENT_DROP, ASK5).first
    assert (ch.logprob_state, ch.logprob_reason, ch.tokens) == ("unavailable", "endpoint_dropped", None)
    ch = completion_from_openai(P.OLLAMA_SILENT_DROP, LogprobAsk(requested=False, sent=False, top_k=None)).first
    assert ch.logprob_reason == "not_requested"


def test_bytes_null_and_empty_top_logprobs() -> None:
    ch = completion_from_openai(P.OPENROUTER_BYTES_NULL, LogprobAsk(requested=True, sent=True, top_k=0)).first
    assert ch.tokens is not None and ch.tokens[0].bytes is None and ch.tokens[0].token == " Hello"
    assert ch.logprob_state == "available" and ch.text == " Hello"


def test_together_legacy_shape_on_chat() -> None:
    c = completion_from_openai(P.TOGETHER_EQUIVALENT, ASK3)
    ch = c.first
    assert ch.tokens is not None
    assert [t.id for t in ch.tokens] == [9906, 0]
    assert [a.token for a in ch.tokens[1].top] == ["!", " there", "."]


def test_legacy_top_logprobs_sorted_most_likely_first() -> None:
    payload = json.loads(json.dumps(P.LEGACY_COMPLETION))
    payload["choices"][0]["logprobs"]["top_logprobs"][0] = {" two": -5.6, " 3": -4.1, " 2": -0.037809037}
    ch = completion_from_openai(payload, ASK3).first
    assert ch.tokens is not None and [a.token for a in ch.tokens[0].top] == [" 2", " 3", " two"]


def test_llama_server_chat_shape_on_completions_endpoint() -> None:
    payload = json.loads((FIXTURES / "llama-server" / "completions_logprobs5.json").read_text())
    ch = completion_from_openai(payload, ASK5).first
    assert ch.text == " A A A" and ch.tokens is not None and len(ch.tokens) == 3
    assert ch.tokens[0].bytes == (32, 65) and ch.tokens[0].id == 256 and len(ch.tokens[0].top) == 5


def test_llama_cpp_python_echo_arrays_with_a_null_first_logprob() -> None:
    payload = json.loads((FIXTURES / "llama-cpp-python-0.3.36" / "completions_logprobs5_echo.json").read_text())
    ch = completion_from_openai(payload, ASK5).first
    assert ch.tokens is not None and ch.tokens[0].logprob is None
    assert ch.logprob_state == "partial"


def test_llama_cpp_python_logprobs_without_top_is_null() -> None:
    payload = json.loads((FIXTURES / "llama-cpp-python-0.3.36" / "chat_logprobs_true_no_top.json").read_text())
    ch = completion_from_openai(payload, LogprobAsk(requested=True, sent=True, top_k=0)).first
    assert (ch.logprob_state, ch.logprob_reason) == ("unavailable", "endpoint_dropped")


def test_stop_string_tokens_past_the_text_are_dropped() -> None:
    payload = json.loads((FIXTURES / "llama-cpp-python-0.3.36" / "chat_stop_sequence.json").read_text())
    ch = completion_from_openai(payload, LogprobAsk(requested=True, sent=True, top_k=2)).first
    assert ch.text == "" and ch.tokens == ()


def test_trim_to_cuts_alternatives_the_host_forced() -> None:
    payload = json.loads((FIXTURES / "llama-server" / "chat_logprobs_top5.json").read_text())
    ch = completion_from_openai(payload, LogprobAsk(requested=True, sent=True, top_k=0, trim_to=0)).first
    assert ch.tokens is not None and all(t.top == () for t in ch.tokens) and ch.logprob_state == "available"


def test_n2_choices_and_refusal() -> None:
    payload = json.loads((FIXTURES / "llama-server" / "chat_n2.json").read_text())
    c = completion_from_openai(payload, LogprobAsk(requested=True, sent=True, top_k=2))
    assert [ch.text for ch in c.choices] == [" A", " B"] and [ch.index for ch in c.choices] == [0, 1]
    r = completion_from_openai(P.OPENAI_REFUSAL_MESSAGE, ASK5).first
    assert r.refusal == "I'm sorry, I can't help with that." and r.text == ""


@pytest.mark.parametrize("payload", [
    [], {"choices": []}, {"choices": [{"message": {"content": 3}}]},
    {"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"token": 5, "logprob": -1}]}}]},
    {"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"token": "x", "logprob": "-1"}]}}]},
    {"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"token": "x", "logprob": -1,
                                                                          "bytes": [300]}]}}]},
])
def test_malformed_payloads_raise(payload: Any) -> None:
    with pytest.raises(MalformedPayload):
        completion_from_openai(payload, ASK5)


def test_result_is_a_valid_completion() -> None:
    c = completion_from_openai(P.OPENAI_EQUIVALENT, ASK3, latency_s=0.25)
    again = Completion.model_validate(c.model_dump())  # model_construct output passes full validation
    assert again == c and c.latency_s == 0.25 and c.top_k_requested == 3
