"""Batch mode: a run's requests go through the vendors' batch engines (OpenAI Batch API, Anthropic
Message Batches) instead of one by one, at half the price and outside the live rate limits.

``flow.start`` (``probe run --batch``), ``flow.collect`` (``probe batch collect``), ``flow.poll_status``
(``probe batch status``); the batches and the custom_id → cache key map live in SQLite (``store``),
so any later process can collect. Vendor code is in ``providers.batch_openai`` / ``providers.batch_anthropic``.
"""

from probe.batch.cost import CostEstimate, estimate_costs
from probe.batch.flow import (
    AdvanceReport,
    BatchSummary,
    advance,
    batch_models_for,
    collect,
    poll_status,
    start,
)
from probe.batch.store import BatchRow, BatchStore

__all__ = [
    "AdvanceReport",
    "BatchRow",
    "BatchStore",
    "BatchSummary",
    "CostEstimate",
    "advance",
    "batch_models_for",
    "collect",
    "estimate_costs",
    "poll_status",
    "start",
]
