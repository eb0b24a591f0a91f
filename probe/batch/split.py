"""Splitting one model's requests into batches within the vendor's limits (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from providers.batch_base import CUSTOM_ID, BatchLimits


def custom_id_for(cache_key: str) -> str:
    """The custom_id of a request: the hex of its cache key (``k1:<64 hex>`` → the hex), which satisfies
    ``^[a-zA-Z0-9_-]{1,64}$``; any other key shape is hashed down to 64 hex characters."""
    hex_part = cache_key.rpartition(":")[2]
    if CUSTOM_ID.match(hex_part):
        return hex_part
    return hashlib.sha256(cache_key.encode("utf-8")).hexdigest()


def too_large(size: int, limits: BatchLimits, envelope: int = 0) -> bool:
    """An entry that cannot fit even a batch of its own."""
    return size + envelope > limits.max_bytes


def starts_new_batch(count: int, used: int, size: int, limits: BatchLimits) -> bool:
    """Whether an entry of ``size`` bytes must open a new batch, given ``count`` entries and ``used`` bytes
    (envelope included) in the current one."""
    return count > 0 and (count + 1 > limits.max_requests or used + size > limits.max_bytes)


def split_sizes(sizes: Sequence[int], limits: BatchLimits, envelope: int = 0) -> tuple[list[list[int]], list[int]]:
    """The partition the batch filler makes of entries of these sizes, in order: index lists, each within
    ``limits`` (requests, and bytes including ``envelope``), and the indices too large for any batch."""
    chunks: list[list[int]] = []
    big: list[int] = []
    current: list[int] = []
    used = envelope
    for i, size in enumerate(sizes):
        if too_large(size, limits, envelope):
            big.append(i)
            continue
        if starts_new_batch(len(current), used, size, limits):
            chunks.append(current)
            current, used = [], envelope
        current.append(i)
        used += size
    if current:
        chunks.append(current)
    return chunks, big
