"""Prompt templates per elicitation, rendered per question and prompt variant.

The default templates carry fixed instruction lines; the simulator recognizes which
elicitation a prompt is by them, so keep ``MARKERS`` in step with the templates.
A variant may override any template by name (see ``probe.suite.TEMPLATE_NAMES``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from probe.completion import Message
from probe.suite import PromptVariant, Question

VerbalForm = Literal["numeric", "linguistic"]

MARKERS = {
    "answer_mc": "Answer with the letter of the correct option only.",
    "answer_short": "Answer with the answer only, as briefly as possible.",
    "ptrue": "Is the proposed answer:",
    "verbal_numeric": "Confidence: <a number from 0 to 100>%",
    "verbal_linguistic": "Confidence: <one of the expressions listed above>",
}

# Hedge expressions and the fixed probabilities they stand for (after the survey medians of
# Fagen-Ulmschneider's "perception of probability words", rounded); longest match wins.
HEDGES: dict[str, float] = {
    "almost certain": 0.95,
    "highly likely": 0.9,
    "very likely": 0.85,
    "likely": 0.7,
    "probably": 0.7,
    "better than even": 0.6,
    "about even": 0.5,
    "we doubt": 0.25,
    "unlikely": 0.2,
    "probably not": 0.25,
    "highly unlikely": 0.1,
    "almost no chance": 0.05,
}

DEFAULT_TEMPLATES: dict[str, str] = {
    "answer_mc": "{question}\n\n{options}\n\n" + MARKERS["answer_mc"],
    "answer_short": "{question}\n\n" + MARKERS["answer_short"],
    "ptrue": (
        "Question: {question}\n{options}\nProposed answer: {proposed}\n\n"
        + MARKERS["ptrue"]
        + "\n(A) True\n(B) False\n\nAnswer with A or B only."
    ),
    "verbal_numeric": (
        "{question}\n\n{options}\n\nGive your answer and how confident you are that it is correct, "
        "in exactly this format:\nAnswer: <your answer>\n" + MARKERS["verbal_numeric"]
    ),
    "verbal_linguistic": (
        "{question}\n\n{options}\n\nGive your answer and how likely it is to be correct, using one of "
        "these expressions: " + ", ".join(HEDGES) + ".\nUse exactly this format:\nAnswer: <your answer>\n"
        + MARKERS["verbal_linguistic"]
    ),
}

PTRUE_LABELS = ("A", "B")  # (A) True, (B) False


class RenderedPrompt(BaseModel):
    """Messages for one elicitation, and how shown option labels map back to the question."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...] = Field(description="System, few-shot and user messages.")
    labels: tuple[str, ...] = Field(default=(), description="Option labels as shown (mc), in order.")
    order: tuple[int, ...] = Field(default=(), description="Original choice index at each shown position.")

    def label_of_choice(self, choice_index: int) -> str:
        """The shown label of an original choice index."""
        return self.labels[self.order.index(choice_index)]

    def choice_of_label(self, label: str) -> int | None:
        """Original choice index behind a shown label, or None."""
        try:
            return self.order[self.labels.index(label)]
        except ValueError:
            return None


def _options(question: Question, variant: PromptVariant) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    if question.kind != "mc":
        return "", (), ()
    assert question.choices is not None
    order = variant.order(question)
    labels = variant.labels[: len(order)]
    if len(labels) < len(order):
        raise ValueError(f"variant {variant.id!r} has {len(labels)} labels for {len(order)} choices")
    lines = "\n".join(f"{label}. {question.choices[i]}" for label, i in zip(labels, order, strict=True))
    return lines, tuple(labels), order


def _messages(variant: PromptVariant, user: str) -> tuple[Message, ...]:
    msgs: list[Message] = []
    if variant.system:
        msgs.append(Message(role="system", content=variant.system))
    for shot in variant.few_shot:
        msgs.append(Message(role="user", content=shot.question))
        msgs.append(Message(role="assistant", content=shot.answer))
    msgs.append(Message(role="user", content=user))
    return tuple(msgs)


def _template(variant: PromptVariant, name: str) -> str:
    return variant.templates.get(name, DEFAULT_TEMPLATES[name])


def _render(name: str, question: Question, variant: PromptVariant, **extra: str) -> RenderedPrompt:
    options, labels, order = _options(question, variant)
    user = _template(variant, name).format(question=question.text, options=options, **extra)
    user = user.replace("\n\n\n\n", "\n\n")  # short answers have no options block
    return RenderedPrompt(messages=_messages(variant, user), labels=labels, order=order)


def answer_prompt(question: Question, variant: PromptVariant) -> RenderedPrompt:
    """Ask for the answer only (mc: the option label)."""
    return _render("answer_mc" if question.kind == "mc" else "answer_short", question, variant)


def ptrue_prompt(question: Question, variant: PromptVariant, proposed: str) -> RenderedPrompt:
    """Kadavath et al.'s self-evaluation: is the proposed answer (A) True or (B) False."""
    return _render("ptrue", question, variant, proposed=proposed)


def verbal_prompt(question: Question, variant: PromptVariant, form: VerbalForm) -> RenderedPrompt:
    """Ask for the answer and a stated confidence (numeric or a hedge expression)."""
    return _render(f"verbal_{form}", question, variant)
