"""``token`` source: confidence from the answer token's top-k alternatives (mc) or the mean token
probability of the answer span (short answers)."""

from __future__ import annotations

import math

from probe.completion import Choice
from probe.elicit._result import Extracted
from probe.elicit.labels import alternatives_with_sampled, find_label_position, label_masses, surface
from probe.grading import mc_choice
from probe.prompts import RenderedPrompt
from probe.record import ConfidenceDetail
from probe.suite import Question


def unavailable(choice: Choice) -> str | None:
    """The unavailable status for a choice without logprobs, or None when it has some."""
    if choice.logprob_state == "unavailable" or choice.tokens is None:
        return f"unavailable:{choice.logprob_reason or 'unknown'}"
    return None


def option_distribution(
    choice: Choice, labels: tuple[str, ...]
) -> tuple[dict[str, float], set[str], int] | str:
    """Per-label probability at the answer position, the labels seen, and the position.

    Returns a status string instead when it cannot be measured.
    """
    status = unavailable(choice)
    if status:
        return status
    assert choice.tokens is not None
    pos = find_label_position(choice.tokens, labels)
    if pos is None:
        return "parse_error"
    tok = choice.tokens[pos]
    if not tok.top:
        return "unavailable:no_top_logprobs"
    mass, seen = label_masses(alternatives_with_sampled(tok), labels)
    return mass, seen, pos


def token_mc(choice: Choice, question: Question, prompt: RenderedPrompt) -> Extracted:
    """Answer label and its probability renormalized over the options."""
    picked = mc_choice(choice.text, question, prompt)
    answer = prompt.label_of_choice(picked) if picked is not None else None
    dist = option_distribution(choice, prompt.labels)
    if isinstance(dist, str):
        if dist == "parse_error" and answer is None:
            return Extracted(status="parse_error", answer=choice.text[:200])
        return Extracted(status=dist, answer=answer or choice.text[:200], choice=picked)
    mass, seen, pos = dist
    if answer is None:
        # the reply's text has no parsable label but a label token was generated
        assert choice.tokens is not None
        key = surface(choice.tokens[pos].token)
        answer = next((lb for lb in prompt.labels if lb.upper() == key), None)
        picked = prompt.choice_of_label(answer) if answer else None
    total = sum(mass.values())
    if answer is None or picked is None or answer not in seen or total <= 0:
        return Extracted(status="parse_error", answer=answer or choice.text[:200], choice=picked)
    complete = len(seen) == len(prompt.labels)
    # original choice i was shown under label_of_choice(i); only a fully seen distribution is stored
    probs = tuple(min(mass[prompt.label_of_choice(i)] / total, 1.0) for i in range(len(prompt.order)))
    detail = ConfidenceDetail(option_mass=min(total, 1.0), outside_topk=not complete,
                              option_probs=probs if complete else None, correct_option=question.answer,
                              answered_option=picked)
    return Extracted(status="ok", answer=answer, choice=picked,
                     confidence=min(mass[answer] / total, 1.0), detail=detail)


def token_short(choice: Choice) -> Extracted:
    """Mean token probability over the answer span; the joint probability beside it."""
    answer = choice.text.strip()
    status = unavailable(choice)
    if status:
        return Extracted(status=status, answer=answer)
    assert choice.tokens is not None
    span = [t for t in choice.tokens if t.token.strip()]
    if not answer or not span:
        return Extracted(status="parse_error", answer=answer)
    if any(t.logprob is None for t in span):
        return Extracted(status="unavailable:partial_logprobs", answer=answer)
    lps = [t.logprob for t in span if t.logprob is not None]
    mean = sum(math.exp(lp) for lp in lps) / len(lps)
    joint = math.exp(sum(lps))
    return Extracted(status="ok", answer=answer, confidence=min(mean, 1.0),
                     detail=ConfidenceDetail(joint_prob=min(joint, 1.0)))
