"""The value every extractor returns."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from probe.record import ConfidenceDetail


class Extracted(BaseModel):
    """An answer and a confidence, or the status saying why there is none."""

    model_config = ConfigDict(frozen=True)

    status: str = Field(description="ok | parse_error | unavailable:<reason>.")
    answer: str | None = Field(default=None, description="Answer as the model gave it (label or text).")
    choice: int | None = Field(default=None, description="mc: original choice index answered.")
    confidence: float | None = Field(default=None, ge=0, le=1, description="Confidence, if measured.")
    detail: ConfidenceDetail = Field(default_factory=ConfidenceDetail, description="Source facts.")
