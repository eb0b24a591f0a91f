"""Canonical JSON and versioned hashes for fingerprints and cache keys.

A hash is ``"<tag>:" + sha256(canonical JSON)``; the tag names the canonical form, so a
change of form shows up as a new tag instead of silently colliding with old keys.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from pydantic import BaseModel

HASH_VERSION = "c1"


def _normalize(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _normalize(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"canonical JSON cannot hold a non-finite number: {value!r}")
    return value


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no insignificant whitespace, UTF-8 kept as is."""
    return json.dumps(
        _normalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def versioned_hash(value: Any, tag: str = HASH_VERSION) -> str:
    """``tag:sha256`` of the canonical JSON of ``value``."""
    digest = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    return f"{tag}:{digest}"
