"""What the HTML templates show: plain, typed values (no numpy, no markup except rendered SVG)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

Interval = tuple[float, float]


class Metric(BaseModel):
    """A figure with its interval; ``value`` None means undefined (shown as a dash, never a number)."""

    model_config = ConfigDict(frozen=True)

    value: float | None = Field(default=None, description="The figure, or None when undefined.")
    ci: Interval | None = Field(default=None, description="95 % interval, if computed.")


class StatusCount(BaseModel):
    """How many records of a group ended with one non-ok status."""

    model_config = ConfigDict(frozen=True)

    status: str = Field(description="ok | parse_error | unavailable:<reason> | error:<kind>.")
    count: int = Field(description="Records with that status.")


class SummaryRow(BaseModel):
    """One row of the summary table (a model × source, pooled over variants, or one variant)."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(description="provider/model.")
    source: str = Field(description="Confidence source.")
    variant: str | None = Field(default=None, description="Prompt variant; None for the pooled row.")
    n: int = Field(description="Records in the group, any status.")
    n_ok: int = Field(description="Records scored (status ok).")
    accuracy: Metric = Field(description="Accuracy with interval.")
    ece: Metric = Field(description="ECE (equal-width) with interval.")
    ece_if_calibrated: Metric = Field(description="ECE a perfectly calibrated model would show here from noise.")
    signed_ece: Metric = Field(description="Signed ECE (positive = overconfident).")
    brier: Metric = Field(description="Brier score with interval.")
    auroc: Metric = Field(description="AUROC with interval (None when undefined).")
    not_ok: list[StatusCount] = Field(default_factory=list, description="Non-ok statuses and counts.")

    @property
    def n_unavailable(self) -> int:
        return sum(s.count for s in self.not_ok if s.status.startswith("unavailable:"))

    @property
    def n_failed(self) -> int:
        return sum(s.count for s in self.not_ok if not s.status.startswith("unavailable:"))


class Diagram(BaseModel):
    """One reliability diagram, already rendered to an inline ``<svg>`` element."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(description="Stable anchor id (model and source, slugged).")
    title: str = Field(description="Caption, e.g. 'sim/calibrated · token'.")
    svg: str = Field(description="The <svg> element matplotlib wrote (inserted unescaped; its text is "
                                 "escaped by matplotlib's SVG writer).")
    series: list[str] = Field(default_factory=list, description="Legend labels, in order.")
    notes: list[str] = Field(default_factory=list, description="Caveats shown under the diagram.")


class Note(BaseModel):
    """Why a (model, source) has no diagram."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(description="provider/model.")
    source: str = Field(description="Confidence source.")
    text: str = Field(description="e.g. 'token: unavailable — provider has no logprobs'.")


class ModelSection(BaseModel):
    """Everything the report shows for one model."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(description="provider/model.")
    reported_id: str | None = Field(default=None, description="Model id the API reported.")
    diagrams: list[Diagram] = Field(default_factory=list, description="One diagram per source it served.")
    notes: list[Note] = Field(default_factory=list, description="Sources it could not serve, and why.")


class ManifestRow(BaseModel):
    """A (label, value) line of the manifest."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="What the value is.")
    value: str = Field(description="The value, as text.")
