"""Record: one row per (run, model, item, source, variant, sample)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Source = Literal["token", "ptrue", "verbal", "consistency"]
SOURCES: tuple[Source, ...] = ("token", "ptrue", "verbal", "consistency")

_STATUS_PREFIXES = ("unavailable:", "error:")


def is_valid_status(status: str) -> bool:
    """``ok``, ``parse_error``, ``unavailable:<reason>`` or ``error:<kind>``."""
    if status in ("ok", "parse_error"):
        return True
    return any(status.startswith(p) and len(status) > len(p) for p in _STATUS_PREFIXES)


class Sampling(BaseModel):
    """Sampling parameters a record was produced with (stored so runs can be compared fairly)."""

    model_config = ConfigDict(frozen=True)

    temperature: float | None = Field(default=None, description="Sampling temperature sent.")
    top_p: float | None = Field(default=None, description="top_p sent, if any.")
    max_tokens: int | None = Field(default=None, description="Token cap sent.")
    top_logprobs: int | None = Field(default=None, description="Alternatives per position asked for.")
    n: int = Field(default=1, description="Choices per call.")
    seed: int | None = Field(default=None, description="Seed sent, if any.")


class ConfidenceDetail(BaseModel):
    """Source-specific facts behind a confidence value."""

    model_config = ConfigDict(frozen=True)

    option_mass: float | None = Field(
        default=None, description="token/ptrue: probability mass that fell on the option labels."
    )
    outside_topk: bool | None = Field(
        default=None, description="token/ptrue: an option was outside the top-k (its share is a bound)."
    )
    option_probs: tuple[float, ...] | None = Field(
        default=None,
        description="token, mc: probability of each option renormalized over the options, in the question's "
                    "original choice order (not the shown order); None unless every option was in the top-k "
                    "(a missing option's share is unknown, never 0).")
    correct_option: int | None = Field(
        default=None, description="token, mc: original index of the correct choice.")
    answered_option: int | None = Field(
        default=None, description="token, mc: original index of the choice the model answered.")
    joint_prob: float | None = Field(default=None, description="token, short: joint sequence probability.")
    raw_confidence: str | None = Field(default=None, description="verbal: the confidence text as written.")
    samples: int | None = Field(default=None, description="consistency: samples that were compared.")
    agreeing: int | None = Field(default=None, description="consistency: samples agreeing with the answer.")


class Record(BaseModel):
    """One measured (or failed) confidence. Errors are never graded as wrong answers."""

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(description="Run this record belongs to.")
    model: str = Field(description="provider/model as asked for.")
    provider: str = Field(description="Provider name.")
    suite: str = Field(description="Suite name.")
    item_id: str = Field(description="Question id within the suite.")
    variant: str = Field(description="Prompt variant id (verbal adds ':numeric' or ':linguistic').")
    source: Source = Field(description="Confidence source.")
    sample: int = Field(default=0, ge=0, description="Sample index (repeat measurements).")
    answer: str | None = Field(default=None, description="The model's answer (option label or text).")
    correct: bool | None = Field(default=None, description="Graded correctness; None when not graded.")
    confidence: float | None = Field(
        default=None, ge=0, le=1, description="Confidence in [0, 1]; None when not measurable."
    )
    status: str = Field(description="ok | parse_error | unavailable:<reason> | error:<kind>.")
    detail: ConfidenceDetail = Field(default_factory=ConfidenceDetail, description="Source facts.")
    error: str | None = Field(default=None, description="Redacted error text for failed records.")
    sampling: Sampling = Field(default_factory=Sampling, description="Sampling parameters used.")
    model_reported: str | None = Field(default=None, description="Model id the API reported.")
    input_tokens: int | None = Field(default=None, description="Prompt tokens over the calls behind it.")
    output_tokens: int | None = Field(default=None, description="Generated tokens over the calls.")
    latency_s: float | None = Field(default=None, description="Wall time of the calls, seconds.")
    request_hash: str | None = Field(default=None, description="Cache key of the (last) request.")
    created_at: datetime | None = Field(default=None, description="When the record was written (UTC).")

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        if not is_valid_status(value):
            raise ValueError(f"invalid status {value!r}")
        return value
