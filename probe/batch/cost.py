"""Estimated cost of a plan, live vs through the batch engines (pure; from the dry run's token estimate)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from probe.runner.run import CostLine
from probe.spec import ModelSpec
from providers.batch_base import has_batch_engine
from providers.prices import PRICES_AS_OF, PRICES_SOURCE, price_for


class CostEstimate(BaseModel):
    """One model's planned tokens and, where its price is known, the estimated cost both ways."""

    model: str = Field(description="provider/model.")
    calls: int = Field(description="Requests planned (before cache).")
    input_tokens: int = Field(description="Estimated prompt tokens (characters / 4).")
    output_tokens: int = Field(description="Upper bound of generated tokens.")
    live_usd: float | None = Field(description="Estimated USD sent live; None when no price is known.")
    batch_usd: float | None = Field(description="Estimated USD through the batch engine; None when no price is "
                                                "known or the provider has no batch engine.")
    batch_engine: bool = Field(description="Whether probe can send this model through a batch engine.")
    note: str = Field(description="What the figures rest on.")


def estimate_costs(lines: list[CostLine]) -> list[CostEstimate]:
    """Per model: calls and tokens summed over sources, priced with the dated table in providers.prices."""
    acc: dict[str, list[int]] = {}
    for x in lines:
        row = acc.setdefault(x.model, [0, 0, 0])
        row[0] += x.calls
        row[1] += x.input_tokens
        row[2] += x.output_tokens
    out = []
    for model, (calls, tin, tout) in acc.items():
        spec = ModelSpec.parse(model)
        price = price_for(spec.provider, spec.model)
        engine = has_batch_engine(spec.provider)
        if price is None:
            note = "tokens only: no price known for this model"
        else:
            note = f"estimate at list prices of {PRICES_AS_OF}; output at its upper bound"
        out.append(CostEstimate(
            model=model, calls=calls, input_tokens=tin, output_tokens=tout,
            live_usd=price.cost(tin, tout, batch=False) if price else None,
            batch_usd=price.cost(tin, tout, batch=True) if price and engine else None,
            batch_engine=engine, note=note,
        ))
    return out


def cost_caption() -> str:
    return f"Estimate only — {PRICES_SOURCE}. Batch = the vendors' 50 % batch discount on both rates."
