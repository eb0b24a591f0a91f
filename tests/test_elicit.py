import math

import pytest

from probe.completion import Choice, TokenLogprob, TopLogprob
from probe.elicit.consistency import consistency
from probe.elicit.ptrue import ptrue
from probe.elicit.token import token_mc, token_short
from probe.elicit.verbal import parse_linguistic, parse_numeric, verbal
from probe.prompts import answer_prompt
from probe.record import ConfidenceDetail
from probe.suite import DEFAULT_VARIANTS, Question

Q = Question(id="q", kind="mc", text="2+2?", choices=("3", "4", "5", "6"), answer=1)
PROMPT = answer_prompt(Q, DEFAULT_VARIANTS[0])


def lp(p: float) -> float:
    return math.log(p)


def choice(text: str, tokens: list[TokenLogprob] | None, state: str = "available", reason: str | None = None) -> Choice:
    return Choice(text=text, tokens=tuple(tokens) if tokens is not None else None,
                  logprob_state=state, logprob_reason=reason)  # type: ignore[arg-type]


def test_token_merges_label_variants_and_renormalizes() -> None:
    top = (TopLogprob(token="B", logprob=lp(0.5)), TopLogprob(token=" B", logprob=lp(0.1)),
           TopLogprob(token="A", logprob=lp(0.2)), TopLogprob(token="(C", logprob=lp(0.1)),
           TopLogprob(token="The", logprob=lp(0.05)))
    ext = token_mc(choice("B", [TokenLogprob(token="B", logprob=lp(0.5), top=top)]), Q, PROMPT)
    assert ext.status == "ok" and ext.answer == "B" and ext.choice == 1
    assert ext.confidence == pytest.approx(0.6 / 0.9)
    assert ext.detail.option_mass == pytest.approx(0.9)
    assert ext.detail.outside_topk is True  # D never appeared


def test_token_zero_logprob_is_probability_one_not_missing() -> None:
    top = (TopLogprob(token="B", logprob=0.0), TopLogprob(token="A", logprob=None))
    ext = token_mc(choice("B", [TokenLogprob(token="B", logprob=0.0, top=top)]), Q, PROMPT)
    assert ext.status == "ok" and ext.confidence == 1.0


def test_token_unavailable_is_never_a_number() -> None:
    ext = token_mc(choice("B", None, "unavailable", "provider_has_none"), Q, PROMPT)
    assert ext.status == "unavailable:provider_has_none" and ext.confidence is None
    no_top = token_mc(choice("B", [TokenLogprob(token="B", logprob=lp(0.9))]), Q, PROMPT)
    assert no_top.status == "unavailable:no_top_logprobs" and no_top.confidence is None


def test_token_short_mean_and_joint() -> None:
    toks = [TokenLogprob(token="10", logprob=lp(0.8)), TokenLogprob(token="00", logprob=lp(0.5))]
    ext = token_short(choice("1000", toks))
    assert ext.confidence == pytest.approx(0.65)
    assert ext.detail.joint_prob == pytest.approx(0.4)
    partial = token_short(choice("1000", [TokenLogprob(token="10", logprob=None)]))
    assert partial.status.startswith("unavailable") and partial.confidence is None


def test_ptrue_renormalizes_over_two_labels() -> None:
    top = (TopLogprob(token="A", logprob=lp(0.6)), TopLogprob(token=" B", logprob=lp(0.2)),
           TopLogprob(token="True", logprob=lp(0.1)))
    ext = ptrue(choice("A", [TokenLogprob(token="A", logprob=lp(0.6), top=top)]), "B. 4")
    assert ext.confidence == pytest.approx(0.75)


def test_verbal_numeric_scales_explicitly() -> None:
    assert parse_numeric("85%") == pytest.approx(0.85)
    assert parse_numeric("85") == pytest.approx(0.85)
    assert parse_numeric("0.85") == pytest.approx(0.85)
    assert parse_numeric("1.0") == pytest.approx(1.0)
    assert parse_numeric("100 %") == pytest.approx(1.0)
    assert parse_numeric("0") == 0.0
    assert parse_numeric("150") is None
    assert parse_numeric("high") is None
    ok = verbal("Answer: B\nConfidence: 90%", "numeric")
    assert ok.status == "ok" and ok.answer == "B" and ok.confidence == pytest.approx(0.9)
    bad = verbal("I think B, fairly sure", "numeric")
    assert bad.status == "parse_error" and bad.confidence is None


def test_verbal_linguistic_longest_hedge_wins() -> None:
    assert parse_linguistic("highly unlikely") == (0.1, "highly unlikely")
    assert parse_linguistic("Probably not") == (0.25, "probably not")
    assert parse_linguistic("likely") == (0.7, "likely")
    assert parse_linguistic("no idea") is None
    assert verbal("Answer: Paris\nConfidence: almost certain", "linguistic").confidence == 0.95


def test_consistency_majority_and_unparsable() -> None:
    ext = consistency(["1", "1", "2", None, "1"], ["B", "B", "C", "??", "B"])
    assert ext.answer == "B" and ext.confidence == pytest.approx(0.6)
    assert ext.detail.samples == 5 and ext.detail.agreeing == 3
    assert consistency([None, None], ["?", "?"]).status == "parse_error"


SHUFFLED = answer_prompt(Q, DEFAULT_VARIANTS[2])  # shown A, B, C, D = original choices 1, 2, 0, 3


def test_token_option_probs_in_original_order_under_shuffling() -> None:
    assert SHUFFLED.order == (1, 2, 0, 3)  # the case is only meaningful when the order is permuted
    top = (TopLogprob(token="A", logprob=lp(0.4)), TopLogprob(token=" A", logprob=lp(0.1)),
           TopLogprob(token="B", logprob=lp(0.2)), TopLogprob(token="(C", logprob=lp(0.15)),
           TopLogprob(token="The", logprob=lp(0.1)), TopLogprob(token="D", logprob=lp(0.05)))
    ext = token_mc(choice("A", [TokenLogprob(token="A", logprob=lp(0.4), top=top)]), Q, SHUFFLED)
    assert ext.status == "ok" and ext.answer == "A" and ext.choice == 1
    d = ext.detail
    assert d.option_probs is not None and d.outside_topk is False
    # original order: choice 0 was shown as C, 1 as A, 2 as B, 3 as D
    assert d.option_probs == pytest.approx((0.15 / 0.9, 0.5 / 0.9, 0.2 / 0.9, 0.05 / 0.9))
    assert sum(d.option_probs) == pytest.approx(1.0)
    assert d.correct_option == 1 and d.answered_option == 1
    assert d.option_probs[d.answered_option] == pytest.approx(ext.confidence)

    wrong = token_mc(choice("B", [TokenLogprob(token="B", logprob=lp(0.2), top=top)]), Q, SHUFFLED)
    assert wrong.choice == 2 and wrong.detail.answered_option == 2 and wrong.detail.correct_option == 1
    assert wrong.detail.option_probs == d.option_probs  # same distribution, whichever label was sampled


def test_token_option_probs_none_when_an_option_is_outside_the_topk() -> None:
    top = (TopLogprob(token="A", logprob=lp(0.6)), TopLogprob(token="B", logprob=lp(0.2)),
           TopLogprob(token="C", logprob=lp(0.1)), TopLogprob(token="The", logprob=lp(0.05)))
    ext = token_mc(choice("A", [TokenLogprob(token="A", logprob=lp(0.6), top=top)]), Q, SHUFFLED)
    assert ext.status == "ok" and ext.detail.outside_topk is True
    assert ext.detail.option_probs is None  # D's share is unknown: never stored as 0
    assert ext.detail.correct_option == 1 and ext.detail.answered_option == 1
    # a placeholder logprob (None) is not a sighting either
    top_none = (*top, TopLogprob(token="D", logprob=None))
    ext = token_mc(choice("A", [TokenLogprob(token="A", logprob=lp(0.6), top=top_none)]), Q, SHUFFLED)
    assert ext.detail.option_probs is None and ext.detail.outside_topk is True


def test_token_detail_of_old_records_still_loads() -> None:
    old = ConfidenceDetail.model_validate_json('{"option_mass": 0.9, "outside_topk": false, "joint_prob": null}')
    assert old.option_probs is None and old.correct_option is None and old.answered_option is None
    assert token_short(choice("4", [TokenLogprob(token="4", logprob=lp(0.9))])).detail.option_probs is None
