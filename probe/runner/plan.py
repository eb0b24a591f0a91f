"""The request plan: one unit per (model, suite, question, variant); each unit yields records."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from probe.errors import UsageError
from probe.record import Source
from probe.suite import PromptVariant, Question, Suite

VERBAL_FORMS = ("numeric", "linguistic")
RecordKey = tuple[str, str, str, str, str, int]  # model, suite, item, variant, source, sample


class Unit(BaseModel):
    """Everything asked about one question in one variant of one model."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str = Field(description="provider/model.")
    suite: Suite = Field(description="The suite.")
    question: Question = Field(description="The question.")
    variant: PromptVariant = Field(description="The prompt variant.")
    sources: tuple[Source, ...] = Field(description="Sources to measure.")

    def record_keys(self) -> list[RecordKey]:
        keys: list[RecordKey] = []
        base = (self.model, self.suite.name, self.question.id)
        for source in self.sources:
            if source == "verbal":
                keys += [(*base, f"{self.variant.id}:{form}", source, 0) for form in VERBAL_FORMS]
            else:
                keys.append((*base, self.variant.id, source, 0))
        return keys

    def calls(self, samples: int, supports_n: bool) -> int:
        """Requests this unit makes if nothing is cached or unavailable."""
        n = 0
        if "token" in self.sources or "ptrue" in self.sources:
            n += 1
        n += 1 if "ptrue" in self.sources else 0
        n += len(VERBAL_FORMS) if "verbal" in self.sources else 0
        if "consistency" in self.sources:
            n += 1 if supports_n else samples
        return n


def select_variants(suite: Suite, wanted: list[str] | None) -> list[PromptVariant]:
    if wanted is None or wanted == ["all"]:
        return list(suite.variants)
    out = []
    for vid in wanted:
        try:
            out.append(suite.variant(vid))
        except KeyError as e:
            raise UsageError(str(e).strip("\"'")) from None
    return out


def build_units(models: list[str], suites: list[Suite], variants: list[str] | None,
                sources: list[Source], limit: int | None) -> list[Unit]:
    """All units, in a stable order (model, suite, question, variant)."""
    units = []
    for model in models:
        for suite in suites:
            chosen = select_variants(suite, variants)
            for q in suite.questions[:limit]:
                for v in chosen:
                    units.append(Unit(model=model, suite=suite, question=q, variant=v, sources=tuple(sources)))
    return units
