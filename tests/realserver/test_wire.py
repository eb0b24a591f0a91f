"""The real llama.cpp server's wire format, via raw HTTP and the official ``openai`` SDK.

Each quirk listed in shared/fixtures/llama-cpp-python-0.3.36/README.md is checked against a live
server here, so probe's handling of them (see test_adapter.py) rests on what the server really does.
"""

from __future__ import annotations

import math

import openai
import pytest

from tests.realserver._wire import MODEL, chat_body, get, post, raw_rows, sdk, sdk_rows
from tests.realserver.server import LlamaServer
from tests.realserver.tiny_gguf import LABEL_BIAS

pytestmark = pytest.mark.realserver

LABELS = {"A", "B", "C", "D"}


def test_models_lists_the_alias(base_url: str) -> None:
    reply = get(base_url + "/models")
    assert reply.status == 200
    assert [m["id"] for m in reply.json()["data"]] == [MODEL]


def test_raw_http_and_openai_sdk_agree_on_every_token_and_logprob(base_url: str) -> None:
    body = chat_body(logprobs=True, top_logprobs=5, max_tokens=4)
    post(base_url + "/chat/completions", body)  # warm the prompt cache: later calls evaluate alike
    raw = post(base_url + "/chat/completions", body)
    assert raw.status == 200, raw.text
    raw_json = raw.json()
    completion = sdk(base_url).chat.completions.create(**body)

    rows_raw, rows_sdk = raw_rows(raw_json), sdk_rows(completion)
    assert len(rows_raw) == 4
    assert rows_raw == rows_sdk  # exact: same tokens, same floats, same order
    assert completion.choices[0].message.content == raw_json["choices"][0]["message"]["content"]
    assert "".join(token for token, _, _ in rows_raw) == completion.choices[0].message.content
    for token, logprob, alts in rows_raw:
        assert logprob is not None and logprob < 0
        assert len(alts) == 5
        assert alts[0] == (token, logprob)  # greedy: the chosen token is the most likely one
        lps = [lp for _, lp in alts if lp is not None]
        assert lps == sorted(lps, reverse=True)
        assert sum(math.exp(lp) for lp in lps) <= 1.0 + 1e-6


def test_logprobs_true_without_top_logprobs_gives_null(base_url: str) -> None:
    body = chat_body(logprobs=True)
    raw = post(base_url + "/chat/completions", body)
    assert raw.status == 200
    choice = raw.json()["choices"][0]
    assert "logprobs" in choice and choice["logprobs"] is None  # OpenAI would list the tokens
    assert sdk(base_url).chat.completions.create(**body).choices[0].logprobs is None
    # asking again with top_logprobs does give them
    again = post(base_url + "/chat/completions", chat_body(logprobs=True, top_logprobs=1))
    assert len(raw_rows(again.json())) == 3


def test_top_logprobs_25_is_accepted_and_returns_25(base_url: str) -> None:
    body = chat_body(logprobs=True, top_logprobs=25, max_tokens=1)
    raw = post(base_url + "/chat/completions", body)
    assert raw.status == 200, raw.text  # OpenAI caps at 20 and rejects more
    (_, _, alts), = raw_rows(raw.json())
    assert len(alts) == 25
    assert len({tok for tok, _ in alts}) == 25
    (_, _, sdk_alts), = sdk_rows(sdk(base_url).chat.completions.create(**body))
    assert len(sdk_alts) == 25


def test_top_logprobs_zero_returns_only_the_chosen_token(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", chat_body(logprobs=True, top_logprobs=0, max_tokens=2))
    assert raw.status == 200
    for token, logprob, alts in raw_rows(raw.json()):
        assert alts == ((token, logprob),)


def test_logprobs_false_with_top_logprobs_is_accepted_silently(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", chat_body(logprobs=False, top_logprobs=5))
    assert raw.status == 200  # OpenAI: 400
    assert raw.json()["choices"][0]["logprobs"] is None


def test_n_is_ignored(base_url: str) -> None:
    body = chat_body(n=2, max_tokens=1)
    raw = post(base_url + "/chat/completions", body)
    assert raw.status == 200
    assert len(raw.json()["choices"]) == 1
    assert len(sdk(base_url).chat.completions.create(**body).choices) == 1


def test_model_field_is_echoed_not_checked(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", {**chat_body(max_tokens=1), "model": "whatever-you-ask"})
    assert raw.status == 200
    assert raw.json()["model"] == "whatever-you-ask"
    assert "system_fingerprint" not in raw.json()


def test_bytes_are_always_null(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", chat_body(logprobs=True, top_logprobs=3))
    for item in raw.json()["choices"][0]["logprobs"]["content"]:
        assert item["bytes"] is None
        assert all(alt["bytes"] is None for alt in item["top_logprobs"])


def test_validation_error_is_500_with_a_server_file_path(base_url: str) -> None:
    body = chat_body(logprobs=True, top_logprobs=-1)
    raw = post(base_url + "/chat/completions", body)
    assert raw.status == 500  # a client error reported as a server error
    assert raw.content_type.startswith("application/json")
    error = raw.json()["error"]
    assert error["type"] == "internal_server_error"
    assert "top_logprobs" in error["message"]
    assert "llama_cpp/server/app.py" in error["message"]
    assert 'File "/' in error["message"]  # an absolute path on the server's disk
    with pytest.raises(openai.InternalServerError) as caught:
        sdk(base_url).chat.completions.create(**body)
    assert caught.value.status_code == 500


def test_malformed_json_is_500_text_plain(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", '{"model": "tiny", "messages": [')
    assert raw.status == 500
    assert raw.content_type.startswith("text/plain")
    assert raw.text == "Internal Server Error"


def test_unknown_path_is_fastapi_404(base_url: str) -> None:
    raw = post(base_url + "/nonexistent", {"x": 1})
    assert raw.status == 404
    assert raw.json() == {"detail": "Not Found"}


def test_context_overflow_is_a_proper_400(base_url: str) -> None:
    raw = post(base_url + "/chat/completions", chat_body(" A" * 2100, max_tokens=1))
    assert raw.status == 400
    error = raw.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["type"] == "invalid_request_error"


def test_auth_failures_are_401_in_fastapi_shape(llama_auth_server: LlamaServer, auth_key: str) -> None:
    url = llama_auth_server.base_url
    body = chat_body(max_tokens=1)
    missing = post(url + "/chat/completions", body)
    wrong = post(url + "/chat/completions", body, {"Authorization": "Bearer sk-wrong-key-0000"})
    for reply in (missing, wrong):
        assert reply.status == 401
        assert reply.json() == {"detail": "Invalid API key"}  # not OpenAI's {"error": {...}}
    assert get(url + "/models").status == 401
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk(url, "sk-wrong-key-0000").chat.completions.create(**body)
    assert caught.value.status_code == 401
    ok = post(url + "/chat/completions", body, {"Authorization": f"Bearer {auth_key}"})
    assert ok.status == 200
    assert sdk(url, auth_key).chat.completions.create(**body).choices[0].message.content


def test_the_tiny_model_answers_with_option_labels(base_url: str) -> None:
    """The shaped output layer: label tokens outrank the rest and answers vary with the question."""
    firsts: set[str] = set()
    for country, options in [
        ("Mali", "A. Bamako\nB. Timbuktu\nC. Dakar\nD. Niamey"),
        ("Peru", "A. Cusco\nB. Lima\nC. Quito\nD. Arequipa"),
        ("Kenya", "A. Mombasa\nB. Kampala\nC. Nairobi\nD. Kisumu"),
        ("Japan", "A. Osaka\nB. Kyoto\nC. Seoul\nD. Tokyo"),
        ("Chile", "A. Lima\nB. Santiago\nC. Valparaiso\nD. La Paz"),
        ("Norway", "A. Bergen\nB. Stockholm\nC. Oslo\nD. Helsinki"),
    ]:
        prompt = f"What is the capital of {country}?\n\n{options}\n\nAnswer with the letter of the correct option only."
        raw = post(base_url + "/chat/completions", chat_body(prompt, logprobs=True, top_logprobs=8, max_tokens=1))
        (token, _, alts), = raw_rows(raw.json())
        assert token.strip() in LABELS
        assert {tok for tok, _ in alts} <= set(LABEL_BIAS), alts  # the top 8 are all shaped tokens
        firsts.add(token.strip())
    assert len(firsts) >= 2, firsts
