"""The official openai SDK as an independent parser: what tokens/logprobs does it see in a payload?"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from openai.types import Completion as SdkCompletion
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from pydantic import ValidationError

Alt = tuple[str, float | None]
Tok = tuple[str, float | None, tuple[Alt, ...]]


def _norm(lp: float | None) -> float | None:
    """The project's rule applied to the SDK's raw number: placeholders and non-finite are missing."""
    if lp is None or not math.isfinite(lp) or lp <= -9999.0:
        return None
    return lp


def _from_chat_items(items: list[Any]) -> list[Tok]:
    out = []
    for t in items:
        get = t.get if isinstance(t, dict) else lambda k, t=t: getattr(t, k, None)
        alts = tuple((a["token"] if isinstance(a, dict) else a.token,
                      _norm(a["logprob"] if isinstance(a, dict) else a.logprob))
                     for a in (get("top_logprobs") or []))
        out.append((get("token"), _norm(get("logprob")), alts))
    return out


def _from_legacy(tokens: list[str], values: list[float | None], tops: list[dict[str, float] | None] | None) -> list[Tok]:
    out = []
    for i, tok in enumerate(tokens):
        top = tops[i] if tops and i < len(tops) and tops[i] else {}
        alts = tuple(sorted(((k, _norm(v)) for k, v in top.items()), key=lambda a: -(a[1] if a[1] is not None
                                                                                    else -math.inf)))
        out.append((tok, _norm(values[i]) if i < len(values) else None, alts))
    return out


LENIENT: list[str] = []  # ids of payloads the SDK's strict validation refused (appended by _parse)

M = TypeVar("M", SdkCompletion, ChatCompletion)


def _parse(cls: type[M], payload: dict[str, Any]) -> M:
    """``cls.model_validate``; where strict validation refuses a host's quirk (null echo entries, an
    omitted ``top_logprobs``), the lenient ``construct`` the SDK client itself uses on responses."""
    try:
        return cls.model_validate(payload)
    except ValidationError:
        LENIENT.append(str(payload.get("id")))
        return cls.construct(**payload)


def sdk_view(payload: dict[str, Any]) -> list[list[Tok] | None]:
    """Per choice: the tokens the SDK parsed (None where the choice has no logprobs)."""
    if payload.get("object") == "response":
        resp = Response.model_validate(payload)
        toks: list[Tok] = []
        for item in resp.output:
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text" and part.logprobs:
                    toks.extend(_from_chat_items(list(part.logprobs)))
        return [toks]
    if payload.get("object") == "text_completion":
        comp = _parse(SdkCompletion, payload)
        views: list[list[Tok] | None] = []
        for c in comp.choices:
            lp = c.logprobs
            if lp is None:
                views.append(None)
            elif lp.tokens is not None:
                views.append(_from_legacy(lp.tokens, list(lp.token_logprobs or []), lp.top_logprobs))
            else:  # llama-server: chat-shaped logprobs on /v1/completions sit in the SDK's extra fields
                extra = (lp.model_extra or {}).get("content")
                views.append(None if extra is None else _from_chat_items(extra))
        return views
    chat = _parse(ChatCompletion, payload)
    out: list[list[Tok] | None] = []
    for c in chat.choices:
        lp = c.logprobs
        if lp is None:
            out.append(None)
        elif lp.content is not None:
            out.append(_from_chat_items(list(lp.content)))
        elif (lp.model_extra or {}).get("tokens") is not None:  # Together's legacy shape on chat
            ex = lp.model_extra or {}
            tops = ex.get("top_logprobs")
            out.append(_from_legacy(ex["tokens"], ex.get("token_logprobs") or [], tops if isinstance(tops, list)
                                    else None))
        else:
            out.append(None)
    return out
