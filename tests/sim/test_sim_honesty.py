"""The simulator's stated truth is honest: among answers reported at confidence c, the share that is
right matches the truth it states, within binomial error.

5,000 token-source answers per persona come from the same code the server runs (request parsing →
Knowledge → Generator → token alternatives), read the way a client reads them (label forms merged,
renormalized over the options), in the plain, shuffled and system-prompt forms, each against the
truth stated for that form; a smaller set goes through HTTP and must give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import httpx
import numpy as np
import pytest

from probe.prompts import RenderedPrompt, answer_prompt, ptrue_prompt
from probe.sim import PERSONAS, Knowledge, Persona, Resolved, consistency_truth, suite_truth
from probe.sim._generate import Generator
from probe.sim._requests import parse_openai
from probe.sim._rng import uniform
from probe.suite import PromptVariant, Question, Suite

N_ITEMS = 5000
PLAIN = PromptVariant(id="plain")
SHUFFLED = PromptVariant(id="shuffled", shuffle_seed=99)
EXPERT = PromptVariant(id="expert", system="You are a careful expert. Answer accurately and do not guess carelessly.")
EXPERT_SHUFFLED = PromptVariant(id="expert-shuffled", system="You are an expert.", shuffle_seed=5)


def synthetic_suite(n: int, kind: str = "mc") -> Suite:
    qs = []
    for i in range(n):
        if kind == "mc":
            k = 2 + i % 4
            qs.append(Question(id=f"q{i}", kind="mc", text=f"Synthetic question {i}: which option is right?",
                               choices=tuple(f"option {i}-{j}" for j in range(k)), answer=(i * 7) % k))
        else:
            qs.append(Question(id=f"s{i}", kind="short", text=f"Synthetic short question {i}?",
                               aliases=(f"answer{i}",), subject=f"group{i % 20}"))
    return Suite(name=f"synthetic-{kind}", version="1", variants=(PLAIN, SHUFFLED, EXPERT, EXPERT_SHUFFLED),
                 questions=tuple(qs))


def understood(kb: Knowledge, prompt: RenderedPrompt, persona: str) -> tuple[Persona, Resolved]:
    """What the server makes of a request with these messages: the reporting persona (its
    system-prompted form under a system prompt) and the resolved prompt (its variant form)."""
    req = parse_openai({"model": f"sim-{persona}", "messages": [m.model_dump() for m in prompt.messages]})
    return req.speaker, kb.resolve(req.prompt, req.system)


@pytest.fixture(scope="module")
def mc_suite() -> Suite:
    return synthetic_suite(N_ITEMS)


@pytest.fixture(scope="module")
def kb(mc_suite: Suite) -> Knowledge:
    return Knowledge([mc_suite])


def surface(token: str) -> str:
    return token.strip(" (*").rstrip(").:*").upper()


def merged(top: Sequence[tuple[str, float]], labels: Sequence[str]) -> dict[str, float]:
    """What a client does: sum each label's surface forms, renormalize over the options."""
    mass = dict.fromkeys(labels, 0.0)
    for tok, lp in top:
        key = surface(tok)
        if key in mass:
            mass[key] += math.exp(lp)
    total = sum(mass.values())
    return {k: v / total for k, v in mass.items()}


def token_draws(suite: Suite, kb: Knowledge, persona: str,
                variant: PromptVariant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reported confidence, right, stated truth) of the token source for every item."""
    gen = Generator(kb.seed)
    truth = {t.item_id: t for t in suite_truth(suite, PERSONAS[persona], knowledge=kb, variant=variant)}
    conf, right, stated = [], [], []
    for q in suite.questions:
        prompt = answer_prompt(q, variant)
        per, r = understood(kb, prompt, persona)
        g = gen.generate(per, r, gen.choose(per, r, 0.0, "g", 0))
        tok = g.tokens[0]
        dist = merged(tok.top, prompt.labels)
        conf.append(dist[g.text])
        right.append(prompt.choice_of_label(g.text) == q.answer)
        stated.append(truth[q.id].token.p_right)
        assert truth[q.id].token.confidence == pytest.approx(dist[g.text], abs=1e-9)
    return np.array(conf), np.array(right, dtype=float), np.array(stated)


def assert_honest(conf: np.ndarray, right: np.ndarray, stated: np.ndarray, bins: int = 10) -> int:
    """Per equal-width bin with n ≥ 30: |accuracy − mean stated truth| within 4 binomial SDs.
    Returns the number of bins checked."""
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    checked = 0
    for b in range(bins):
        sel = idx == b
        n = int(sel.sum())
        if n < 30:
            continue
        acc, truth = right[sel].mean(), stated[sel].mean()
        sd = math.sqrt(max(truth * (1 - truth), 1e-4) / n)
        assert abs(acc - truth) <= 4 * sd + 1e-9, f"bin {b}: n={n} accuracy {acc:.3f} vs stated {truth:.3f}"
        checked += 1
    # and over all items at once, a tighter look: the total count of right answers
    total_sd = math.sqrt(float(np.sum(stated * (1 - stated))))
    assert abs(right.sum() - stated.sum()) <= 4 * total_sd
    return checked


def test_calibrated_token_confidence_is_calibrated_and_the_truth_says_so(mc_suite: Suite, kb: Knowledge) -> None:
    conf, right, stated = token_draws(mc_suite, kb, "calibrated", PLAIN)
    assert np.allclose(conf, stated)  # calibrated: the truth behind c is c
    assert assert_honest(conf, right, stated) >= 5
    assert 0.6 <= right.mean() <= 0.85  # a realistic accuracy with spread in p
    assert conf.std() > 0.1


def test_overconfident_truth_is_honest_and_below_its_reported_confidence(mc_suite: Suite, kb: Knowledge) -> None:
    conf, right, stated = token_draws(mc_suite, kb, "overconfident", PLAIN)
    assert assert_honest(conf, right, stated) >= 4
    assert np.all(stated <= conf + 1e-12)
    high = conf >= 0.5
    assert right[high].mean() < conf[high].mean() - 0.05  # visibly overconfident


def test_underconfident_truth_is_honest_and_above_its_reported_confidence(mc_suite: Suite, kb: Knowledge) -> None:
    conf, right, stated = token_draws(mc_suite, kb, "underconfident", SHUFFLED)
    assert assert_honest(conf, right, stated) >= 4
    assert np.all(stated >= conf - 1e-12)
    assert right.mean() > conf.mean() + 0.05


@pytest.mark.parametrize("variant", [EXPERT, EXPERT_SHUFFLED], ids=lambda v: v.id)
def test_calibrated_stays_calibrated_under_a_system_prompt(mc_suite: Suite, kb: Knowledge,
                                                           variant: PromptVariant) -> None:
    conf, right, stated = token_draws(mc_suite, kb, "calibrated", variant)
    assert np.allclose(conf, stated)  # its reported c is the true p of this prompt's form
    assert assert_honest(conf, right, stated) >= 5
    plain = {t.item_id: t.latent_p for t in suite_truth(mc_suite, PERSONAS["calibrated"], knowledge=kb)}
    moved = np.abs(stated - np.array([plain[q.id] for q in mc_suite.questions]))
    assert moved.max() > 0.02 and moved.mean() < 0.1  # its own p per item, near the plain one
    assert abs(stated.mean() - np.mean(list(plain.values()))) < 0.02  # no more accurate on the whole


def test_overconfident_overstates_more_under_a_system_prompt(mc_suite: Suite, kb: Knowledge) -> None:
    conf, right, stated = token_draws(mc_suite, kb, "overconfident", EXPERT)
    assert assert_honest(conf, right, stated) >= 4
    assert np.all(stated <= conf + 1e-12)
    plain_conf, _, plain_stated = token_draws(mc_suite, kb, "overconfident", PLAIN)
    gap, plain_gap = float(np.mean(conf - stated)), float(np.mean(plain_conf - plain_stated))
    assert gap > plain_gap + 0.02  # sharper: γ 0.4 → 0.3
    assert abs(stated.mean() - plain_stated.mean()) < 0.02  # while not more accurate
    assert conf.mean() > plain_conf.mean() + 0.02


@pytest.mark.parametrize("variant", [PLAIN, EXPERT], ids=lambda v: v.id)
def test_short_answer_mean_token_probability_is_honest(variant: PromptVariant) -> None:
    suite = synthetic_suite(1200, "short")
    kb = Knowledge([suite])
    gen = Generator(kb.seed)
    for name in ("calibrated", "overconfident"):
        truth = {t.item_id: t for t in suite_truth(suite, PERSONAS[name], knowledge=kb, variant=variant)}
        conf, right, stated = [], [], []
        for q in suite.questions:
            per, r = understood(kb, answer_prompt(q, variant), name)
            g = gen.generate(per, r, gen.choose(per, r, 0.0, "g", 0))
            probs = [math.exp(t.logprob) for t in g.tokens if t.text.strip()]
            conf.append(sum(probs) / len(probs))
            right.append(g.text in (q.aliases or ()))
            stated.append(truth[q.id].token.p_right)
            assert truth[q.id].token.joint_prob == pytest.approx(math.prod(probs), rel=1e-9)
        assert assert_honest(np.array(conf), np.array(right, dtype=float), np.array(stated)) >= 4


@pytest.mark.parametrize(("persona", "variant"), [("calibrated", PLAIN), ("overconfident", EXPERT_SHUFFLED)],
                         ids=["calibrated-plain", "overconfident-expert-shuffled"])
def test_ptrue_of_its_own_answer_is_honest(mc_suite: Suite, kb: Knowledge, persona: str,
                                           variant: PromptVariant) -> None:
    gen = Generator(kb.seed)
    truth = {t.item_id: t for t in suite_truth(mc_suite, PERSONAS[persona], knowledge=kb, variant=variant)}
    conf, right, stated = [], [], []
    for q in mc_suite.questions[:1500]:
        prompt = answer_prompt(q, variant)
        per, r = understood(kb, prompt, persona)
        answer = gen.generate(per, r, gen.choose(per, r, 0.0, "g", 0)).text
        choice = prompt.choice_of_label(answer)
        assert choice is not None and q.choices is not None
        pt = ptrue_prompt(q, variant, f"{answer}. {q.choices[choice]}")
        per, rp = understood(kb, pt, persona)
        assert rp.state is r.state  # the same variant form as the answer it judges
        g = gen.generate(per, rp, gen.choose(per, rp, 0.0, "g", 0))
        p_true = merged(g.tokens[0].top, ("A", "B"))["A"]
        assert p_true == pytest.approx(truth[q.id].ptrue.confidence, abs=1e-9)
        conf.append(p_true)
        right.append(choice == q.answer)
        stated.append(truth[q.id].ptrue.p_right)
    assert assert_honest(np.array(conf), np.array(right, dtype=float), np.array(stated)) >= 4


def test_consistency_truth_matches_sampling(mc_suite: Suite, kb: Knowledge) -> None:
    """The exact majority-vote truth agrees with the sampler the server uses (K = 5, T = 1)."""
    gen = Generator(kb.seed)
    per = PERSONAS["overconfident"]
    k, draws = 5, 3000
    for q in (mc_suite.questions[3], mc_suite.questions[10], mc_suite.questions[17]):
        r = kb.resolve(answer_prompt(q, PLAIN).messages[-1].content)
        st = r.state
        assert st is not None
        truth = consistency_truth(st.sampling(per, 1.0), [bool(c.correct) for c in st.candidates], k)
        counts = np.zeros(k + 1)
        rights = np.zeros(k + 1)
        for d in range(draws):
            picks = [gen.choose(per, r, 1.0, f"s{d}", j) for j in range(k)]
            best = max(picks.count(c) for c in set(picks))
            winner = next(c for c in picks if picks.count(c) == best)
            counts[best] += 1
            rights[best] += st.candidates[winner].correct
        assert truth.by_agreeing is not None
        for row in truth.by_agreeing:
            m = row.agreeing
            sd = math.sqrt(row.probability * (1 - row.probability) / draws)
            assert abs(counts[m] / draws - row.probability) <= 4 * sd + 1e-3
            if counts[m] >= 50 and row.p_right is not None:
                sd_r = math.sqrt(max(row.p_right * (1 - row.p_right), 1e-3) / counts[m])
                assert abs(rights[m] / counts[m] - row.p_right) <= 4 * sd_r + 1e-3


def test_consistency_truth_monte_carlo_agrees_with_exact() -> None:
    dist = [0.5, 0.2, 0.1, 0.1, 0.05, 0.05]
    correct = [False, True, False, False, False, False]
    exact = consistency_truth(dist, correct, 6)
    import probe.sim._truth as truth_mod

    old = truth_mod.MAX_EXACT
    truth_mod.MAX_EXACT = 1
    try:
        approx = consistency_truth(dist, correct, 6, seed=3)
    finally:
        truth_mod.MAX_EXACT = old
    assert exact.exact and not approx.exact
    assert approx.confidence == pytest.approx(exact.confidence, abs=0.01)
    assert approx.p_right == pytest.approx(exact.p_right, abs=0.01)


def test_http_round_trip_gives_the_same_numbers(sim_url: str, mini_suite: Suite) -> None:
    """Through the server: the answers and merged confidences equal the truth it states."""
    for persona in ("calibrated", "overconfident"):
        with httpx.Client(base_url=sim_url, timeout=10) as c:
            for variant in mini_suite.variants:
                truth = {t.item_id: t for t in suite_truth(mini_suite, PERSONAS[persona], variant=variant)}
                for q in mini_suite.questions:
                    prompt = answer_prompt(q, variant)
                    body = c.post("/chat/completions", json={
                        "model": f"sim-{persona}", "messages": [m.model_dump() for m in prompt.messages],
                        "logprobs": True, "top_logprobs": 20, "temperature": 0, "max_tokens": 16}).json()
                    ch = body["choices"][0]
                    t = truth[q.id]
                    if q.kind == "mc":
                        top = [(a["token"], a["logprob"]) for a in ch["logprobs"]["content"][0]["top_logprobs"]]
                        got = merged(top, prompt.labels)[ch["message"]["content"]]
                        assert prompt.choice_of_label(ch["message"]["content"]) == t.answer_choice
                    else:
                        lps = [e["logprob"] for e in ch["logprobs"]["content"]]
                        got = sum(math.exp(lp) for lp in lps) / len(lps)
                        assert ch["message"]["content"] == t.answer
                    assert got == pytest.approx(t.token.confidence, abs=1e-9)


def test_latent_draws_are_stable_across_processes() -> None:
    """The hash-based draws are fixed numbers, not Python's randomized hash()."""
    assert uniform(0, "x", "right") == pytest.approx(uniform(0, "x", "right"))
    assert 0.0 < uniform(1, 2, 3) < 1.0
    assert uniform("a") != uniform("b")
