"""How the simulator answers: deterministic, each variant form as its own truth says (and mostly
the same answers across variants), sampling as its distribution says, and readable by probe's own
parsers."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import httpx
import pytest

from probe.elicit.verbal import verbal
from probe.grading import short_correct
from probe.prompts import answer_prompt, ptrue_prompt, verbal_prompt
from probe.sim import PERSONAS, Knowledge, build_app, running_sim, stats_url, suite_truth
from probe.sim._generate import Generator
from probe.suite import PromptVariant, Question, Suite

from .conftest import stats


def _post(c: httpx.Client, messages: list[dict[str, str]], persona: str = "sim-calibrated",
          **extra: Any) -> dict[str, Any]:
    r = c.post("/chat/completions", json={"model": persona, "messages": messages, **extra})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _msgs(prompt: Any) -> list[dict[str, str]]:
    return [m.model_dump() for m in prompt.messages]


def _contents(body: dict[str, Any]) -> list[str]:
    return [c["message"]["content"] for c in body["choices"]]


def test_same_request_same_answer_and_fresh_servers_agree(client: httpx.Client, mini_suite: Suite) -> None:
    bodies = [_msgs(answer_prompt(q, v)) for q in mini_suite.questions for v in mini_suite.variants]
    extra = {"temperature": 0, "logprobs": True, "top_logprobs": 5}
    first = [_post(client, m, **extra)["choices"] for m in bodies]
    again = [_post(client, m, **extra)["choices"] for m in bodies]
    assert first == again
    with running_sim(app=build_app(suites=[mini_suite], bundled=False)) as url, \
            httpx.Client(base_url=url, timeout=10) as other:
        assert [_post(other, m, **extra)["choices"] for m in bodies] == first


def test_the_seed_changes_which_items_it_gets_right(mini_suite: Suite) -> None:
    per = PERSONAS["calibrated"]
    a = [t.right for t in suite_truth(mini_suite, per, seed=0)]
    b = [t.right for t in suite_truth(mini_suite, per, seed=1)]
    assert a != b


def test_every_variant_answers_as_its_own_truth_says(client: httpx.Client, mini_suite: Suite) -> None:
    """Shuffled options are mapped back to the original choices, and each variant's answer is the one
    the truth states for that variant form (which may differ from the plain form's)."""
    for v in mini_suite.variants:
        truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS["calibrated"], variant=v)}
        for q in mini_suite.questions:
            prompt = answer_prompt(q, v)
            got = _contents(_post(client, _msgs(prompt), temperature=0))[0]
            if q.kind == "mc":
                assert prompt.choice_of_label(got) == truth[q.id].answer_choice
            else:
                assert got == truth[q.id].answer
            assert truth[q.id].system_prompt is (v.system is not None)
            assert (truth[q.id].order is not None) is (q.kind == "mc" and prompt.order != tuple(range(4)))
    assert any(answer_prompt(q, mini_suite.variants[1]).order != tuple(range(4))
               for q in mini_suite.questions if q.kind == "mc")


def test_anthropic_system_parameter_is_the_same_form_as_a_system_message(client: httpx.Client,
                                                                        mini_suite: Suite) -> None:
    v = mini_suite.variants[2]
    assert v.system is not None
    truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS["overconfident"], variant=v)}
    for q in mini_suite.questions:
        prompt = answer_prompt(q, v)
        user = [m.model_dump() for m in prompt.messages if m.role != "system"]
        r = client.post("/messages", json={"model": "sim-overconfident", "max_tokens": 16, "temperature": 0,
                                           "system": v.system, "messages": user})
        text = r.json()["content"][0]["text"]
        if q.kind == "mc":
            assert prompt.choice_of_label(text) == truth[q.id].answer_choice
        else:
            assert text == truth[q.id].answer
        verbal_msgs = _msgs(verbal_prompt(q, v, "numeric"))
        stated = verbal(_contents(_post(client, verbal_msgs, persona="sim-overconfident", temperature=0))[0],
                        "numeric")
        assert stated.confidence == pytest.approx(truth[q.id].verbal_numeric.confidence)


def test_variant_forms_shift_p_a_little_and_keep_most_answers() -> None:
    """Over many items: a system prompt moves p per item with no net gain, a shuffle adds position
    bias (an answer moved to the front gains), and most greedy answers stay the same."""
    qs = tuple(Question(id=f"q{i}", kind="mc", text=f"Variant question {i}?",
                        choices=tuple(f"opt {i}-{j}" for j in range(4)), answer=i % 4) for i in range(3000))
    expert = PromptVariant(id="expert", system="You are an expert.")
    shuffled = PromptVariant(id="shuffled", shuffle_seed=11)
    suite = Suite(name="forms", version="1", variants=(PromptVariant(id="plain"), expert, shuffled), questions=qs)
    kb = Knowledge([suite])
    per = PERSONAS["calibrated"]
    plain = suite_truth(suite, per, knowledge=kb)
    for v in (expert, shuffled):
        form = suite_truth(suite, per, knowledge=kb, variant=v)
        same = sum(a.answer_choice == b.answer_choice for a, b in zip(plain, form, strict=True)) / len(qs)
        assert 0.8 < same < 1.0
        dp = [b.latent_p - a.latent_p for a, b in zip(plain, form, strict=True)]
        assert abs(sum(dp) / len(dp)) < 0.01
        assert max(abs(d) for d in dp) > 0.03
    moved = [(q.answer, b.order.index(q.answer), b.logit_shift)
             for q, b in zip(qs, suite_truth(suite, per, knowledge=kb, variant=shuffled), strict=True)
             if b.order is not None and q.answer is not None]
    front = [s for a, j, s in moved if j < a]
    back = [s for a, j, s in moved if j > a]
    assert sum(front) / len(front) > 0.1 > -0.1 > sum(back) / len(back)


def test_samples_follow_the_sampling_distribution(client: httpx.Client, mini_suite: Suite) -> None:
    q = next(q for q in mini_suite.questions if q.kind == "mc")
    prompt = answer_prompt(q, mini_suite.variants[1])
    state = Knowledge([mini_suite]).state(q, "mini", mini_suite.variants[1])
    for persona, temperature in (("overconfident", 1.0), ("underconfident", 0.7)):
        dist = state.sampling(PERSONAS[persona], temperature)
        counts: Counter[int | None] = Counter()
        for call in range(8):
            body = _post(client, _msgs(prompt), persona=f"sim-{persona}", n=128, temperature=temperature, seed=call)
            counts.update(prompt.choice_of_label(c) for c in _contents(body))
        total = sum(counts.values())
        assert total == 1024 and None not in counts
        for choice, prob in enumerate(dist):
            sd = math.sqrt(prob * (1 - prob) / total)
            assert abs(counts[choice] / total - prob) <= 4 * sd + 1e-3


def test_repeats_and_seeds_at_positive_temperature(client: httpx.Client, mini_suite: Suite, sim_url: str) -> None:
    q = next(q for q in mini_suite.questions if q.kind == "short" and q.id.startswith("sum"))
    msgs = _msgs(answer_prompt(q, mini_suite.variants[0]))
    greedy = _post(client, msgs, n=3, temperature=0)
    assert len(set(_contents(greedy))) == 1
    runs = [_contents(_post(client, msgs, n=4, temperature=1.5)) for _ in range(6)]
    assert len({tuple(r) for r in runs}) > 1  # repeated calls vary like a real API
    client.post(stats_url(sim_url) + "/reset")
    assert [_contents(_post(client, msgs, n=4, temperature=1.5)) for _ in range(6)] == runs  # and replay
    seeded = [_contents(_post(client, msgs, temperature=1.5, seed=s)) for s in (1, 2, 1)]
    assert seeded[0] == seeded[2]


def test_short_answers_are_graded_as_the_truth_says(client: httpx.Client, mini_suite: Suite) -> None:
    for seed in range(3):
        kb = Knowledge([mini_suite], seed=seed)
        for q in mini_suite.questions:
            if q.kind != "short":
                continue
            st = kb.state(q, "mini")
            for cand in st.candidates:
                assert short_correct(cand.text, q) is bool(cand.correct)
    truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS["calibrated"])}
    for q in mini_suite.questions:
        if q.kind == "short":
            text = _post(client, _msgs(answer_prompt(q, mini_suite.variants[0])), temperature=0)
            assert short_correct(_contents(text)[0], q) is truth[q.id].right


def test_verbal_answers_parse_with_probes_parser_and_match_the_truth(client: httpx.Client,
                                                                     mini_suite: Suite) -> None:
    v = mini_suite.variants[1]
    for persona in ("calibrated", "verbal-rounder", "nologprobs"):
        truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS[persona], variant=v)}
        for q in mini_suite.questions:
            t = truth[q.id]
            for form in ("numeric", "linguistic"):
                prompt = verbal_prompt(q, v, form)  # type: ignore[arg-type]
                text = _contents(_post(client, _msgs(prompt), persona=f"sim-{persona}", temperature=0))[0]
                ext = verbal(text, form)  # type: ignore[arg-type]
                assert ext.status == "ok", text
                want = t.verbal_numeric if form == "numeric" else t.verbal_linguistic
                assert ext.confidence == pytest.approx(want.confidence)
                assert ext.answer is not None
                if q.kind == "mc":
                    assert prompt.choice_of_label(ext.answer) == t.answer_choice
                else:
                    assert ext.answer == t.answer
            if persona == "verbal-rounder":
                assert t.verbal_numeric.confidence is not None
                assert round(t.verbal_numeric.confidence * 100) % 10 == 0
                assert t.verbal_numeric.confidence >= t.latent_p - 0.05  # overstated (up to rounding)


def test_ptrue_follows_its_belief_in_the_proposed_answer(client: httpx.Client, mini_suite: Suite) -> None:
    q = mini_suite.questions[0]
    v = mini_suite.variants[1]
    assert q.choices is not None
    kb = Knowledge([mini_suite])
    st = kb.state(q, "mini", v)
    prompt = answer_prompt(q, v)
    for choice, text in enumerate(q.choices):
        proposed = f"{prompt.label_of_choice(choice)}. {text}"
        for persona in ("calibrated", "overconfident"):
            body = _post(client, _msgs(ptrue_prompt(q, v, proposed)), persona=f"sim-{persona}", temperature=0,
                         logprobs=True, top_logprobs=20)
            top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            mass = {lb: sum(math.exp(t["logprob"]) for t in top if t["token"].strip(" (") == lb) for lb in "AB"}
            p_true = mass["A"] / (mass["A"] + mass["B"])
            assert p_true == pytest.approx(PERSONAS[persona].p_true(st.belief[choice]))
            assert _contents(body)[0] == ("A" if p_true >= 0.5 else "B")
    short = next(q for q in mini_suite.questions if q.kind == "short")
    assert short.aliases is not None
    no_lp = _post(client, _msgs(ptrue_prompt(short, v, short.aliases[1])), persona="sim-nologprobs",
                  temperature=0, logprobs=True, top_logprobs=5)
    assert no_lp["choices"][0]["logprobs"] is None and _contents(no_lp)[0] in ("A", "B")


def test_unknown_questions_get_a_low_confidence_guess(client: httpx.Client) -> None:
    q = Question(id="x", kind="mc", text="Which moon of Neptune is the smallest?",
                 choices=("Naiad", "Thalassa", "Despina", "Galatea"), answer=0)
    prompt = answer_prompt(q, PromptVariant(id="plain"))
    body = _post(client, _msgs(prompt), temperature=0, logprobs=True, top_logprobs=20)
    label = _contents(body)[0]
    assert label in prompt.labels
    top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    mass = {lb: sum(math.exp(t["logprob"]) for t in top if t["token"].strip(" (") == lb) for lb in prompt.labels}
    assert mass[label] / sum(mass.values()) < 0.35
    short = Question(id="y", kind="short", text="What is 31337 times 7?", aliases=("219359",))
    body = _post(client, _msgs(answer_prompt(short, PromptVariant(id="plain"))), temperature=0, logprobs=True)
    probs = [math.exp(t["logprob"]) for t in body["choices"][0]["logprobs"]["content"]]
    assert _contents(body)[0] and sum(probs) / len(probs) < 0.2
    verb = _contents(_post(client, _msgs(verbal_prompt(short, PromptVariant(id="plain"), "numeric")),
                           temperature=0))[0]
    ext = verbal(verb, "numeric")
    assert ext.status == "ok" and ext.confidence is not None and ext.confidence <= 0.2
    hello = _contents(_post(client, [{"role": "user", "content": "Hello there"}]))[0]
    assert "simulated model" in hello


def test_custom_templates_and_few_shot_are_understood(client: httpx.Client, mini_suite: Suite) -> None:
    q = next(q for q in mini_suite.questions if q.kind == "mc")
    truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS["calibrated"])}[q.id]
    custom = PromptVariant(id="custom", labels=("1", "2", "3", "4"), shuffle_seed=3,
                           templates={"answer_mc": "Quiz time. {question}\n{options}\nReply with the number."})
    prompt = answer_prompt(q, custom)
    got = _contents(_post(client, _msgs(prompt), temperature=0))[0]
    custom_truth = suite_truth(mini_suite, PERSONAS["calibrated"], variant=custom)[0]
    assert custom_truth.item_id == q.id and custom_truth.order == prompt.order != (0, 1, 2, 3)
    assert prompt.choice_of_label(got) == custom_truth.answer_choice
    # few-shot examples do not change the form: the plain form's answer
    few = mini_suite.variants[0].model_copy(update={"few_shot": ()})
    shots = PromptVariant(id="shots", few_shot=(
        {"question": "What is the capital of Italy?\n\nA. Rome\nB. Milan", "answer": "A"},  # type: ignore[arg-type]
    ))
    for v in (few, shots):
        p = answer_prompt(q, v)
        assert p.choice_of_label(_contents(_post(client, _msgs(p), temperature=0))[0]) == truth.answer_choice


def test_stats_count_calls_by_endpoint_persona_and_elicitation(client: httpx.Client, mini_suite: Suite,
                                                               sim_url: str) -> None:
    q = mini_suite.questions[0]
    v = mini_suite.variants[0]
    _post(client, _msgs(answer_prompt(q, v)), persona="sim-calibrated")
    _post(client, _msgs(verbal_prompt(q, v, "numeric")), persona="overconfident", n=3)
    _post(client, _msgs(ptrue_prompt(q, v, "A")), persona="sim-calibrated")
    client.get("/models")
    s = stats(sim_url)
    assert s["requests"] == 4 and s["choices"] == 5
    assert s["by_endpoint"] == {"chat.completions": 3, "models": 1}
    assert s["by_persona"] == {"calibrated": 2, "overconfident": 1}
    assert s["by_elicitation"] == {"answer": 1, "verbal_numeric": 1, "ptrue": 1}
    client.post(stats_url(sim_url) + "/reset")
    assert stats(sim_url)["requests"] == 0


def test_pure_generator_and_server_agree_on_a_whole_variant(client: httpx.Client, mini_suite: Suite) -> None:
    kb = Knowledge([mini_suite])
    gen = Generator(kb.seed)
    per = PERSONAS["underconfident"]
    for q in mini_suite.questions:
        prompt = answer_prompt(q, mini_suite.variants[1])
        r = kb.resolve(prompt.messages[-1].content)
        want = gen.generate(per, r, gen.choose(per, r, 0.0, "g", 0)).text
        assert _contents(_post(client, _msgs(prompt), persona="sim-underconfident", temperature=0))[0] == want
