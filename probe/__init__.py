"""probe: calibration of hosted LLMs, measured through their own HTTP APIs."""

from probe.completion import (
    CallFailure,
    ChatRequest,
    Choice,
    Completion,
    Message,
    ProviderError,
    TokenLogprob,
    TopLogprob,
    Usage,
)
from probe.hashing import canonical_json, versioned_hash
from probe.record import Record
from probe.spec import ModelSpec
from probe.suite import PromptVariant, Question, Suite

__version__ = "0.1.0"

__all__ = [
    "CallFailure",
    "ChatRequest",
    "Choice",
    "Completion",
    "Message",
    "ModelSpec",
    "PromptVariant",
    "ProviderError",
    "Question",
    "Record",
    "Suite",
    "TokenLogprob",
    "TopLogprob",
    "Usage",
    "__version__",
    "canonical_json",
    "versioned_hash",
]
