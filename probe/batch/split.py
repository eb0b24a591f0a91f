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


def split_sizes(sizes: Sequence[int], limits: BatchLimits, envelope: int = 0) -> tuple[list[range], list[int]]:
    """Consecutive index ranges, each within ``limits`` (requests, and bytes including ``envelope``),
    and the indices of entries too large to fit any batch on their own."""
    chunks: list[range] = []
    too_large: list[int] = []
    start = None
    count = 0
    used = envelope
    last = 0
    for i, size in enumerate(sizes):
        if size + envelope > limits.max_bytes:
            if start is not None:
                chunks.append(range(start, last + 1))
                start = None
            too_large.append(i)
            continue
        if start is not None and (count + 1 > limits.max_requests or used + size > limits.max_bytes):
            chunks.append(range(start, last + 1))
            start = None
        if start is None:
            start, count, used = i, 0, envelope
        count += 1
        used += size
        last = i
    if start is not None:
        chunks.append(range(start, last + 1))
    return chunks, too_large
