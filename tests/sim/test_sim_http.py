"""The official SDKs, pointed at the simulator, parse every response; shapes are OpenAI's and
Anthropic's own."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from probe.prompts import answer_prompt, ptrue_prompt, verbal_prompt
from probe.sim import PERSONAS, root_url, suite_truth
from probe.suite import Suite

from .conftest import stats


def _msgs(prompt: object) -> list[dict[str, str]]:
    return [m.model_dump() for m in prompt.messages]  # type: ignore[attr-defined]


@pytest.fixture()
def oai(sim_url: str) -> Iterator[openai.AsyncOpenAI]:
    yield openai.AsyncOpenAI(base_url=sim_url, api_key="x", max_retries=0)


@pytest.fixture()
def ant(sim_url: str) -> Iterator[anthropic.AsyncAnthropic]:
    yield anthropic.AsyncAnthropic(base_url=root_url(sim_url), api_key="x", max_retries=0)


def test_openai_sdk_parses_chat_completions_with_logprobs(oai: openai.AsyncOpenAI, mini_suite: Suite) -> None:
    async def main() -> None:
        for q in mini_suite.questions[:4]:
            prompt = answer_prompt(q, mini_suite.variants[1])
            r = await oai.chat.completions.create(model="sim-calibrated", messages=_msgs(prompt),  # type: ignore[arg-type]
                                                  logprobs=True, top_logprobs=20, temperature=0, max_tokens=16,
                                                  seed=1)
            assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
            assert r.model == "sim-calibrated-v1" and r.system_fingerprint
            ch = r.choices[0]
            assert ch.finish_reason == "stop" and ch.message.role == "assistant"
            assert ch.logprobs is not None and ch.logprobs.content
            tok = ch.logprobs.content[0]
            assert tok.bytes == list(tok.token.encode())
            assert 1 <= len(tok.top_logprobs) <= 20
            assert [t.logprob for t in tok.top_logprobs] == sorted((t.logprob for t in tok.top_logprobs), reverse=True)
            assert any(t.token == tok.token and t.logprob == tok.logprob for t in tok.top_logprobs)
            assert r.usage is not None and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
            if q.kind == "mc":
                assert ch.message.content in prompt.labels
                assert math.isclose(sum(math.exp(t.logprob) for t in tok.top_logprobs), 1.0, rel_tol=1e-9)
    asyncio.run(main())


def test_openai_sdk_logprob_options(oai: openai.AsyncOpenAI, mini_suite: Suite) -> None:
    msgs = _msgs(answer_prompt(mini_suite.questions[0], mini_suite.variants[0]))

    async def main() -> None:
        plain = await oai.chat.completions.create(model="sim-calibrated", messages=msgs, temperature=0)  # type: ignore[arg-type]
        assert plain.choices[0].logprobs is None
        no_top = await oai.chat.completions.create(model="calibrated", messages=msgs, logprobs=True)  # type: ignore[arg-type]
        assert no_top.choices[0].logprobs is not None
        assert no_top.choices[0].logprobs.content is not None
        assert no_top.choices[0].logprobs.content[0].top_logprobs == []
        top2 = await oai.chat.completions.create(model="sim-overconfident", messages=msgs, logprobs=True,  # type: ignore[arg-type]
                                                 top_logprobs=2)
        assert top2.choices[0].logprobs is not None and top2.choices[0].logprobs.content is not None
        assert len(top2.choices[0].logprobs.content[0].top_logprobs) == 2
        none = await oai.chat.completions.create(model="sim-nologprobs", messages=msgs, logprobs=True,  # type: ignore[arg-type]
                                                 top_logprobs=5, temperature=0)
        assert none.choices[0].logprobs is None and none.choices[0].message.content
    asyncio.run(main())


def test_openai_sdk_n_choices_and_models(oai: openai.AsyncOpenAI, mini_suite: Suite) -> None:
    msgs = _msgs(answer_prompt(mini_suite.questions[2], mini_suite.variants[0]))

    async def main() -> None:
        r = await oai.chat.completions.create(model="sim-calibrated", messages=msgs, n=7, temperature=1.0,  # type: ignore[arg-type]
                                              logprobs=True, top_logprobs=3)
        assert [c.index for c in r.choices] == list(range(7))
        assert r.usage is not None and r.usage.completion_tokens == 7
        models = await oai.models.list()
        assert {m.id for m in models.data} == {f"sim-{p}" for p in PERSONAS}
        one = await oai.models.retrieve("sim-underconfident")
        assert one.id == "sim-underconfident"
    asyncio.run(main())


def test_openai_sdk_raises_typed_errors_for_bad_requests(oai: openai.AsyncOpenAI, mini_suite: Suite) -> None:
    msgs = _msgs(answer_prompt(mini_suite.questions[0], mini_suite.variants[0]))

    async def main() -> None:
        with pytest.raises(openai.NotFoundError) as nf:
            await oai.chat.completions.create(model="sim-nobody", messages=msgs)  # type: ignore[arg-type]
        assert nf.value.code == "model_not_found"
        with pytest.raises(openai.BadRequestError) as br:
            await oai.chat.completions.create(model="sim-calibrated", messages=msgs, logprobs=True,  # type: ignore[arg-type]
                                              top_logprobs=21)
        assert br.value.param == "top_logprobs"
        with pytest.raises(openai.BadRequestError):
            await oai.chat.completions.create(model="sim-calibrated", messages=msgs, top_logprobs=3)  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError):
            await oai.chat.completions.create(model="sim-calibrated", messages=msgs, temperature=2.5)  # type: ignore[arg-type]
    asyncio.run(main())


def test_openai_sdk_token_cap_and_stop(oai: openai.AsyncOpenAI, mini_suite: Suite) -> None:
    msgs = _msgs(verbal_prompt(mini_suite.questions[1], mini_suite.variants[0], "numeric"))

    async def main() -> None:
        full = await oai.chat.completions.create(model="sim-calibrated", messages=msgs, temperature=0)  # type: ignore[arg-type]
        text = full.choices[0].message.content or ""
        assert text.startswith("Answer: ") and "\nConfidence: " in text
        capped = await oai.chat.completions.create(model="sim-calibrated", messages=msgs, temperature=0,  # type: ignore[arg-type]
                                                   max_completion_tokens=2, logprobs=True)
        assert capped.choices[0].finish_reason == "length"
        assert capped.choices[0].message.content == "Answer:"
        stopped = await oai.chat.completions.create(model="sim-calibrated", messages=msgs, temperature=0,  # type: ignore[arg-type]
                                                    stop=["\n"])
        assert stopped.choices[0].finish_reason == "stop"
        assert stopped.choices[0].message.content == text.split("\n")[0]
    asyncio.run(main())


def test_anthropic_sdk_parses_messages(ant: anthropic.AsyncAnthropic, mini_suite: Suite, sim_url: str) -> None:
    truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS["calibrated"])}

    async def main() -> None:
        for q in mini_suite.questions[:6]:
            prompt = answer_prompt(q, mini_suite.variants[2])
            m = await ant.messages.create(model="sim-calibrated", max_tokens=20, system=prompt.messages[0].content,
                                          messages=[{"role": "user", "content": prompt.messages[-1].content}],
                                          extra_body={"temperature": 0})
            assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
            assert m.stop_reason == "end_turn" and m.usage.output_tokens >= 1
            block = m.content[0]
            assert block.type == "text"
            if q.kind == "mc":
                assert prompt.choice_of_label(block.text) == truth[q.id].answer_choice
            else:
                assert block.text == truth[q.id].answer
        capped = await ant.messages.create(
            model="sim-verbal-rounder", max_tokens=1,
            messages=[{"role": "user", "content": verbal_prompt(mini_suite.questions[0], mini_suite.variants[0],
                                                                "linguistic").messages[-1].content}])
        assert capped.stop_reason == "max_tokens"
        stopped = await ant.messages.create(
            model="sim-verbal-rounder", max_tokens=50, stop_sequences=["Confidence"],
            messages=[{"role": "user", "content": verbal_prompt(mini_suite.questions[0], mini_suite.variants[0],
                                                                "numeric").messages[-1].content}])
        assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == "Confidence"
        models = await ant.models.list()
        assert {mm.id for mm in models.data} == {f"sim-{p}" for p in PERSONAS}
        with pytest.raises(anthropic.BadRequestError):
            await ant.messages.create(model="sim-calibrated", max_tokens=5, messages=[],)
        with pytest.raises(anthropic.NotFoundError):
            await ant.messages.create(model="claude-nothing", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    asyncio.run(main())
    s = stats(sim_url)
    assert s["by_endpoint"]["messages"] >= 9  # type: ignore[index]


def test_ptrue_and_verbal_prompts_through_the_sdk(oai: openai.AsyncOpenAI, mini_suite: Suite) -> None:
    q = mini_suite.questions[0]
    v = mini_suite.variants[0]
    per = PERSONAS["overconfident"]
    truth = {t.item_id: t for t in suite_truth(mini_suite, per)}[q.id]
    assert q.choices is not None and truth.answer_choice is not None
    prompt = answer_prompt(q, v)
    label = prompt.label_of_choice(truth.answer_choice)

    async def main() -> None:
        pt = await oai.chat.completions.create(
            model="sim-overconfident", temperature=0, logprobs=True, top_logprobs=20,
            messages=_msgs(ptrue_prompt(q, v, f"{label}. {q.choices[truth.answer_choice]}")))  # type: ignore[index]
        assert pt.choices[0].logprobs is not None and pt.choices[0].logprobs.content is not None
        top = pt.choices[0].logprobs.content[0].top_logprobs
        mass = {lb: sum(math.exp(t.logprob) for t in top if t.token.strip(" (") == lb) for lb in ("A", "B")}
        assert mass["A"] / (mass["A"] + mass["B"]) == pytest.approx(truth.ptrue.confidence)
        num = await oai.chat.completions.create(model="sim-overconfident", temperature=0,
                                                messages=_msgs(verbal_prompt(q, v, "numeric")))  # type: ignore[arg-type]
        assert num.choices[0].message.content == f"Answer: {label}\nConfidence: {truth.verbal_numeric.text}"
        ling = await oai.chat.completions.create(model="sim-overconfident", temperature=0,
                                                 messages=_msgs(verbal_prompt(q, v, "linguistic")))  # type: ignore[arg-type]
        assert ling.choices[0].message.content == f"Answer: {label}\nConfidence: {truth.verbal_linguistic.text}"
    asyncio.run(main())


def test_raw_response_shape_is_exactly_openais(client: httpx.Client, mini_suite: Suite) -> None:
    msgs = _msgs(answer_prompt(mini_suite.questions[0], mini_suite.variants[0]))
    r = client.post("/chat/completions", json={"model": "sim-calibrated", "messages": msgs, "logprobs": True,
                                               "top_logprobs": 3, "max_tokens": 1})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["x-request-id"].startswith("req_")
    body = r.json()
    assert set(body) == {"id", "object", "created", "model", "choices", "usage", "service_tier",
                         "system_fingerprint"}
    ch = body["choices"][0]
    assert set(ch) == {"index", "message", "logprobs", "finish_reason"}
    assert set(ch["message"]) == {"role", "content", "refusal", "annotations"}
    assert set(ch["logprobs"]) == {"content", "refusal"}
    entry = ch["logprobs"]["content"][0]
    assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"}
    assert all(set(t) == {"token", "logprob", "bytes"} for t in entry["top_logprobs"])
    assert set(body["usage"]) >= {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert client.get("/nowhere").status_code == 404
    assert client.get("/chat/completions").status_code == 405
    bad = client.post("/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and "error" in bad.json()
