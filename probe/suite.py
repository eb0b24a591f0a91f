"""Questions, prompt variants and suites (the in-memory form; files are read by ``probe.suite_io``)."""

from __future__ import annotations

import random
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from probe.hashing import versioned_hash

SUITE_FINGERPRINT_TAG = "s1"
DEFAULT_LABELS: tuple[str, ...] = tuple("ABCDEFGHIJ")
TEMPLATE_NAMES = ("answer_mc", "answer_short", "ptrue", "verbal_numeric", "verbal_linguistic")


class Question(BaseModel):
    """One item of a suite: multiple choice (``mc``) or short answer (``short``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, description="Stable id within the suite.")
    kind: Literal["mc", "short"] = Field(description="mc: pick an option; short: free-text answer.")
    text: str = Field(min_length=1, description="The question as shown to the model.")
    choices: tuple[str, ...] | None = Field(default=None, description="Options (mc only), at least two.")
    answer: int | None = Field(default=None, description="Index of the correct choice (mc only).")
    aliases: tuple[str, ...] | None = Field(
        default=None, description="Accepted answers (short only); the first is the canonical one."
    )
    subject: str | None = Field(default=None, description="Subject area, for slicing results.")
    tags: tuple[str, ...] = Field(default=(), description="Free-form tags (e.g. difficulty).")

    @model_validator(mode="after")
    def _check_kind(self) -> Question:
        if self.kind == "mc":
            if self.choices is None or len(self.choices) < 2:
                raise ValueError("choices: an mc question needs at least two choices")
            if len(self.choices) > len(DEFAULT_LABELS):
                raise ValueError(f"choices: at most {len(DEFAULT_LABELS)} choices are supported")
            if any(not c.strip() for c in self.choices):
                raise ValueError("choices: a choice is empty")
            if len(set(self.choices)) != len(self.choices):
                raise ValueError("choices: two choices have the same text")
            if self.answer is None:
                raise ValueError("answer: an mc question needs the index of its correct choice")
            if not 0 <= self.answer < len(self.choices):
                raise ValueError(
                    f"answer: index {self.answer} is out of range for {len(self.choices)} choices"
                )
            if self.aliases is not None:
                raise ValueError("aliases: only short questions have aliases")
        else:
            if not self.aliases:
                raise ValueError("aliases: a short question needs at least one accepted answer")
            if any(not a.strip() for a in self.aliases):
                raise ValueError("aliases: an alias is empty")
            if self.choices is not None or self.answer is not None:
                raise ValueError("choices: a short question has no choices or answer index")
        return self

    @property
    def correct_text(self) -> str:
        """The canonical correct answer as text."""
        if self.kind == "mc":
            assert self.choices is not None and self.answer is not None
            return self.choices[self.answer]
        assert self.aliases is not None
        return self.aliases[0]


class FewShot(BaseModel):
    """One worked example shown before the question."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1, description="Example question, fully rendered.")
    answer: str = Field(min_length=1, description="Example answer.")


class PromptVariant(BaseModel):
    """A way of asking: every variant gets its own reliability curve."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Variant id, e.g. 'plain'.")
    description: str = Field(default="", description="What this variant changes.")
    system: str | None = Field(default=None, description="System prompt, if any.")
    labels: tuple[str, ...] = Field(default=DEFAULT_LABELS, min_length=2, description="Option labels.")
    shuffle_seed: int | None = Field(
        default=None, description="If set, options are permuted per question with this seed."
    )
    few_shot: tuple[FewShot, ...] = Field(default=(), description="Worked examples shown first.")
    templates: dict[str, str] = Field(
        default_factory=dict, description=f"Overrides of the default templates: {', '.join(TEMPLATE_NAMES)}."
    )

    @field_validator("templates")
    @classmethod
    def _known_templates(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(TEMPLATE_NAMES))
        if unknown:
            raise ValueError(f"unknown template name(s) {unknown}; known: {list(TEMPLATE_NAMES)}")
        return value

    def order(self, question: Question) -> tuple[int, ...]:
        """Presentation order of the question's choices: original indices, in shown order."""
        assert question.choices is not None
        idx = list(range(len(question.choices)))
        if self.shuffle_seed is not None:
            random.Random(f"{self.shuffle_seed}:{question.id}").shuffle(idx)
        return tuple(idx)


DEFAULT_VARIANTS: tuple[PromptVariant, ...] = (
    PromptVariant(id="plain", description="The question as is, no system prompt."),
    PromptVariant(
        id="expert",
        description="A system prompt that casts the model as a careful expert.",
        system="You are a careful expert. Answer accurately and do not guess carelessly.",
    ),
    PromptVariant(
        id="shuffled",
        description="Options permuted per question with a fixed seed; the correct index follows.",
        shuffle_seed=1234,
    ),
)


class Suite(BaseModel):
    """A named, versioned set of questions with the prompt variants to ask them in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Suite name.")
    version: str = Field(min_length=1, description="Version of the content, bumped on edits.")
    description: str = Field(default="", description="What the suite measures.")
    license: str = Field(default="", description="License of the content.")
    source: str = Field(default="", description="Where the facts come from.")
    variants: tuple[PromptVariant, ...] = Field(default=DEFAULT_VARIANTS, min_length=1)
    questions: tuple[Question, ...] = Field(min_length=1, description="The items.")

    @model_validator(mode="after")
    def _unique(self) -> Suite:
        ids = [v.id for v in self.variants]
        if len(set(ids)) != len(ids):
            raise ValueError("variants: duplicate variant id")
        return self

    @cached_property
    def fingerprint(self) -> str:
        """Versioned hash of the canonical content (everything but the description)."""
        content = self.model_dump(mode="json", exclude={"description"})
        return versioned_hash(content, tag=SUITE_FINGERPRINT_TAG)

    def variant(self, variant_id: str) -> PromptVariant:
        for v in self.variants:
            if v.id == variant_id:
                return v
        known = ", ".join(v.id for v in self.variants)
        raise KeyError(f"suite {self.name!r} has no variant {variant_id!r} (known: {known})")

    def question(self, question_id: str) -> Question:
        for q in self.questions:
            if q.id == question_id:
                return q
        raise KeyError(f"suite {self.name!r} has no question {question_id!r}")
