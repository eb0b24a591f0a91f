"""What every provider adapter takes (ChatRequest) and returns (Completion), and how calls fail.

A missing logprob is never a number: ``logprob`` is ``None`` when the API gave a placeholder
(-9999, -inf, null) and the status of a choice's logprobs says whether they are available,
partial (and what is missing) or unavailable (and why).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LogprobState = Literal["available", "partial", "unavailable"]
UnavailableReason = Literal["provider_has_none", "model_refused", "endpoint_dropped", "not_requested"]
ErrorKind = Literal[
    "rate_limit", "quota", "overloaded", "transient", "auth", "bad_request", "refusal", "malformed",
    "expired", "canceled",  # batch lines the vendor's batch engine did not run (24 h window, cancellation)
]
ERROR_KINDS: tuple[ErrorKind, ...] = (
    "rate_limit", "quota", "overloaded", "transient", "auth", "bad_request", "refusal", "malformed",
    "expired", "canceled",
)


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"] = Field(description="Who speaks.")
    content: str = Field(description="Plain text content.")


class ChatRequest(BaseModel):
    """A provider-neutral chat request; adapters translate it to their wire format."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...] = Field(description="The conversation, oldest first.")
    max_tokens: int | None = Field(default=None, ge=1, description="Cap on generated tokens.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")
    top_p: float | None = Field(default=None, gt=0, le=1, description="Nucleus sampling mass.")
    n: int = Field(default=1, ge=1, le=128, description="Number of choices to sample in one call.")
    logprobs: bool = Field(default=False, description="Ask for per-token log-probabilities.")
    top_logprobs: int | None = Field(
        default=None, ge=0, le=20, description="Alternatives per position (needs logprobs)."
    )
    seed: int | None = Field(default=None, description="Sampling seed, where the API takes one.")
    stop: tuple[str, ...] | None = Field(default=None, description="Stop sequences.")


class TopLogprob(BaseModel):
    """One alternative at a token position."""

    model_config = ConfigDict(frozen=True)

    token: str = Field(description="Token string exactly as sent by the API (leading spaces kept).")
    logprob: float | None = Field(
        description="Natural-log probability; None where the API gave a placeholder (-9999, -inf, null)."
    )
    bytes: tuple[int, ...] | None = Field(default=None, description="UTF-8 bytes of the token, if given.")
    id: int | None = Field(default=None, description="Token id, if the API gives one.")


class TokenLogprob(BaseModel):
    """The sampled token at one position, with its alternatives."""

    model_config = ConfigDict(frozen=True)

    token: str = Field(description="Token string exactly as sent by the API (leading spaces kept).")
    logprob: float | None = Field(description="Natural-log probability; None for a placeholder.")
    bytes: tuple[int, ...] | None = Field(default=None, description="UTF-8 bytes of the token, if given.")
    id: int | None = Field(default=None, description="Token id, if the API gives one.")
    top: tuple[TopLogprob, ...] = Field(
        default=(), description="Top-k alternatives at this position, most likely first."
    )


class Choice(BaseModel):
    """One generated choice with its per-token logprobs (or why there are none)."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(default=0, ge=0, description="Position among the call's choices.")
    text: str = Field(description="Generated text (rebuilt from bytes where the API gave them).")
    finish_reason: str | None = Field(default=None, description="Why generation stopped, as reported.")
    tokens: tuple[TokenLogprob, ...] | None = Field(
        default=None, description="Per-token logprobs; None when unavailable."
    )
    logprob_state: LogprobState = Field(description="available, partial or unavailable.")
    logprob_reason: str | None = Field(
        default=None,
        description="For unavailable: provider_has_none | model_refused | endpoint_dropped | not_requested; "
        "for partial: which positions or alternatives are missing.",
    )
    refusal: str | None = Field(default=None, description="Refusal text, if the model refused.")


class Usage(BaseModel):
    """Token counts reported by the API (None where it reported none)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int | None = Field(default=None, ge=0, description="Prompt tokens.")
    output_tokens: int | None = Field(default=None, ge=0, description="Generated tokens.")


class Completion(BaseModel):
    """What every adapter returns for one call: its choices, the reported model, usage, latency."""

    model_config = ConfigDict(frozen=True)

    choices: tuple[Choice, ...] = Field(min_length=1, description="Generated choices (n of them).")
    model_reported: str | None = Field(default=None, description="The model id the API reported.")
    usage: Usage = Field(default_factory=Usage, description="Token usage.")
    latency_s: float = Field(default=0.0, ge=0, description="Wall time of the call, seconds.")
    dropped_params: tuple[str, ...] = Field(
        default=(), description="Request parameters dropped because the model rejected them."
    )
    top_k_requested: int | None = Field(default=None, description="top_logprobs asked for.")

    @property
    def text(self) -> str:
        """Text of the first choice."""
        return self.choices[0].text

    @property
    def first(self) -> Choice:
        """The first choice."""
        return self.choices[0]


class CallFailure(BaseModel):
    """A classified failed call: kept as data, recorded as status ``error:<kind>``."""

    model_config = ConfigDict(frozen=True)

    kind: ErrorKind = Field(description="Classified failure kind.")
    message: str = Field(description="Human-readable cause, with secrets redacted.")
    status_code: int | None = Field(default=None, description="HTTP status, if any.")
    retry_after: float | None = Field(default=None, ge=0, description="Server-given delay, seconds.")


class ProviderError(Exception):
    """Raised by adapters; carries a CallFailure (the text never holds a key)."""

    def __init__(self, failure: CallFailure) -> None:
        super().__init__(f"{failure.kind}: {failure.message}")
        self.failure = failure

    @property
    def kind(self) -> ErrorKind:
        return self.failure.kind


class ConfigError(Exception):
    """A provider cannot be used as configured (unknown provider, missing key variable)."""
