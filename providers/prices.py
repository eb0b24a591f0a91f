"""A small table of list prices per known model, for ESTIMATES only (the dry run's live vs batch cost).

Prices are USD per million tokens, standard (synchronous) tier, as quoted in March 2026 by
third-party mirrors of the vendors' pricing pages (not checked against the vendors' own pages, which
change): treat every figure as an estimate and check the vendor's page before spending. Both batch
engines charge half of both rates (providers.md §12: "50 % discount on input and output tokens").
A model matches its entry exactly or as a dated snapshot (``gpt-4o-mini-2024-07-18``,
``claude-sonnet-4-5-20250929``); anything else has no price (the dry run shows tokens only).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

PRICES_AS_OF = "2026-03"
PRICES_SOURCE = ("vendors' list prices as quoted by third-party mirrors of their pricing pages, "
                 f"{PRICES_AS_OF}; not verified against the vendors' pages")
BATCH_DISCOUNT = 0.5

_SNAPSHOT = re.compile(r"^-(\d{8}|\d{4}-\d{2}-\d{2})$")


class ModelPrice(BaseModel):
    """List price of one model (USD per million tokens)."""

    model_config = ConfigDict(frozen=True)

    provider: str = Field(description="Provider name.")
    model: str = Field(description="Model name (snapshot suffixes match too).")
    input_per_mtok: float = Field(ge=0, description="USD per million input tokens, synchronous.")
    output_per_mtok: float = Field(ge=0, description="USD per million output tokens, synchronous.")
    batch_factor: float = Field(default=BATCH_DISCOUNT, gt=0, le=1, description="Batch price / live price.")

    def cost(self, input_tokens: int, output_tokens: int, *, batch: bool) -> float:
        usd = (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6
        return usd * (self.batch_factor if batch else 1.0)


def _p(provider: str, model: str, inp: float, out: float) -> ModelPrice:
    return ModelPrice(provider=provider, model=model, input_per_mtok=inp, output_per_mtok=out)


PRICES: tuple[ModelPrice, ...] = (
    _p("openai", "gpt-4o", 2.50, 10.00),
    _p("openai", "gpt-4o-mini", 0.15, 0.60),
    _p("openai", "gpt-4.1", 2.00, 8.00),
    _p("openai", "gpt-4.1-mini", 0.40, 1.60),
    _p("openai", "gpt-4.1-nano", 0.10, 0.40),
    _p("openai", "gpt-5", 1.25, 10.00),
    _p("openai", "gpt-5-mini", 0.25, 2.00),
    _p("openai", "gpt-5-nano", 0.05, 0.40),
    _p("openai", "o3", 2.00, 8.00),
    _p("openai", "o3-mini", 1.10, 4.40),
    _p("openai", "o4-mini", 1.10, 4.40),
    _p("anthropic", "claude-opus-4-6", 5.00, 25.00),
    _p("anthropic", "claude-opus-4-5", 5.00, 25.00),
    _p("anthropic", "claude-opus-4-1", 15.00, 75.00),
    _p("anthropic", "claude-opus-4", 15.00, 75.00),
    _p("anthropic", "claude-sonnet-4-6", 3.00, 15.00),
    _p("anthropic", "claude-sonnet-4-5", 3.00, 15.00),
    _p("anthropic", "claude-sonnet-4", 3.00, 15.00),
    _p("anthropic", "claude-haiku-4-5", 1.00, 5.00),
    _p("anthropic", "claude-3-5-haiku", 0.80, 4.00),
    _p("anthropic", "claude-3-haiku", 0.25, 1.25),
)


def price_for(provider: str, model: str) -> ModelPrice | None:
    """The table entry for ``provider``/``model`` (exact name or a dated snapshot of it), or None."""
    for p in PRICES:
        if p.provider != provider:
            continue
        if model == p.model or (model.startswith(p.model) and _SNAPSHOT.match(model[len(p.model):])):
            return p
    return None
