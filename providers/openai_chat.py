"""OpenAI Chat Completions wire format: pure converters (request → JSON, JSON → Completion).

The response reader is tolerant of every host that speaks this format: the chat shape
(``logprobs.content[]``, with llama.cpp's extra ``id`` and Fireworks' ``token_id``), the legacy shape
(``tokens`` / ``token_logprobs`` / ``top_logprobs`` dicts — Together on chat, ``/v1/completions``),
``text_completion`` objects (``choices[].text``), ``bytes: null``, empty or absent ``top_logprobs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from probe.completion import ChatRequest, Completion
from providers.hosts import HostProfile
from providers.normalize import (
    PLACEHOLDER_FLOOR,
    ChoiceDict,
    MalformedPayload,
    TokenDict,
    TopDict,
    build_completion,
    choice_with_tokens,
    clean_bytes,
    clean_id,
    clean_logprob,
    count,
    make_token,
    make_top,
    sort_top,
    text_from_tokens,
    token_string,
    unavailable_choice,
)


@dataclass(frozen=True, slots=True)
class LogprobAsk:
    """What was asked for, so the reader can say why logprobs are missing.

    ``requested``: the caller wanted logprobs; ``sent``: the request carried them (False when the
    model refused them earlier or the host has none); ``top_k``: alternatives asked for (after the
    host cap); ``trim_to``: cut alternatives back to this many (the host needed a larger k sent).
    """

    requested: bool
    sent: bool
    top_k: int | None
    trim_to: int | None = None
    reason_if_unsent: str = "provider_has_none"


def logprob_ask(req: ChatRequest, profile: HostProfile, *, refused: bool) -> tuple[LogprobAsk, int | None]:
    """The LogprobAsk for ``req`` on ``profile`` and the top_logprobs value to send (None: don't send)."""
    if not req.logprobs:
        return LogprobAsk(requested=False, sent=False, top_k=None), None
    if not profile.logprobs or refused:
        reason = "model_refused" if refused and profile.logprobs else "provider_has_none"
        return LogprobAsk(requested=True, sent=False, top_k=None, reason_if_unsent=reason), None
    k = min(req.top_logprobs or 0, profile.max_top_logprobs)
    send = max(k, profile.min_top_logprobs, 1 if profile.legacy_logprobs_request else 0)
    return LogprobAsk(requested=True, sent=True, top_k=k, trim_to=k if send > k else None), send


def chat_request_to_openai(req: ChatRequest, profile: HostProfile, *, model: str, top_logprobs: int | None,
                           drop: Sequence[str] = (), max_tokens_field: str | None = None) -> dict[str, Any]:
    """The JSON body of a Chat Completions request. ``top_logprobs`` None: no logprob parameters."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": m.role, "content": m.content} for m in req.messages]}
    if req.max_tokens is not None:
        body[max_tokens_field or profile.max_tokens_field] = req.max_tokens
    if req.temperature is not None and "temperature" not in drop:
        body["temperature"] = req.temperature
    if req.top_p is not None and "top_p" not in drop:
        body["top_p"] = req.top_p
    if req.n > 1:
        body["n"] = req.n
    if req.seed is not None:
        body["seed"] = req.seed
    if req.stop:
        body["stop"] = list(req.stop)
    if top_logprobs is not None:
        if profile.legacy_logprobs_request:
            body["logprobs"] = top_logprobs
        else:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        if profile.require_parameters:
            body["provider"] = {"require_parameters": True}
    return body


def _entry(a: Any) -> TopDict:
    """One ``{token, logprob, bytes[, id | token_id]}`` object (hot path: checks inlined)."""
    if type(a) is not dict:
        raise MalformedPayload("a logprobs entry is not an object")
    token = a.get("token")
    if type(token) is not str:
        token = token_string(token)
    lp = a.get("logprob")
    if not (type(lp) is float and PLACEHOLDER_FLOOR < lp <= 0.0):
        lp = clean_logprob(lp)
    raw = a.get("bytes")
    if raw is not None:
        raw = clean_bytes(raw)
    tid = a.get("id", a.get("token_id"))
    return {"token": token, "logprob": lp, "bytes": raw, "id": tid if type(tid) is int else None}


def tokens_from_chat_shape(content: Any) -> list[TokenDict]:
    """``logprobs.content[]`` entries → tokens (alternatives kept in the API's order)."""
    if type(content) is not list:
        raise MalformedPayload("logprobs.content is not a list")
    out: list[TokenDict] = []
    for t in content:
        tok = _entry(t)
        items = t.get("top_logprobs")
        if items is None:
            top: list[TopDict] = []
        elif type(items) is list:
            top = [_entry(a) for a in items]
        else:
            raise MalformedPayload("top_logprobs is not a list")
        out.append({"token": tok["token"], "logprob": tok["logprob"], "bytes": tok["bytes"], "id": tok["id"],
                    "top": top})
    return out


def _top_from_dict(entry: Any) -> list[TopDict]:
    if entry is None:
        return []
    if not isinstance(entry, dict):
        raise MalformedPayload("legacy top_logprobs entry is not an object")
    return sort_top([make_top(token_string(k), clean_logprob(v)) for k, v in entry.items()])


def tokens_from_legacy_shape(lp: Mapping[str, Any]) -> list[TokenDict]:
    """Legacy ``tokens`` / ``token_logprobs`` / ``top_logprobs`` (dicts, most likely first after sorting)."""
    toks = lp.get("tokens")
    values = lp.get("token_logprobs") or []
    tops = lp.get("top_logprobs")
    ids = lp.get("token_ids") or []
    if not isinstance(toks, list) or not isinstance(values, list) or not isinstance(ids, list):
        raise MalformedPayload("legacy logprobs arrays are not lists")
    if isinstance(tops, dict):  # Together's spec declares one map; only unambiguous for one token
        tops = [tops] if len(toks) == 1 else None
    if tops is not None and not isinstance(tops, list):
        raise MalformedPayload("legacy top_logprobs is not a list")
    out = []
    for i, tok in enumerate(toks):
        out.append(make_token(
            token_string(tok),
            clean_logprob(values[i]) if i < len(values) else None,
            None,
            clean_id(ids[i]) if i < len(ids) else None,
            _top_from_dict(tops[i]) if tops is not None and i < len(tops) else [],
        ))
    return out


def tokens_from_logprobs(lp: Any) -> list[TokenDict] | None:
    """A choice's ``logprobs`` object in either shape → tokens; None when absent/null/empty object."""
    if lp is None:
        return None
    if not isinstance(lp, dict):
        raise MalformedPayload("choice logprobs is not an object")
    if "content" in lp:
        content = lp["content"]
        return None if content is None else tokens_from_chat_shape(content)
    if "tokens" in lp:
        return tokens_from_legacy_shape(lp)
    return None


def _trim(tokens: list[TokenDict], k: int) -> list[TokenDict]:
    for t in tokens:
        del t["top"][k:]
    return tokens


def _message_parts(choice: Mapping[str, Any]) -> tuple[str | None, str | None]:
    message = choice.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        refusal = message.get("refusal")
        if content is not None and not isinstance(content, str):
            raise MalformedPayload("message.content is not a string")
        return content, refusal if isinstance(refusal, str) else None
    text = choice.get("text")
    if text is not None and not isinstance(text, str):
        raise MalformedPayload("choice text is not a string")
    return text, None


def choice_from_openai(choice: Any, position: int, ask: LogprobAsk) -> ChoiceDict:
    if not isinstance(choice, dict):
        raise MalformedPayload("a choice is not an object")
    index = choice.get("index", position)
    if not isinstance(index, int) or index < 0:
        index = position
    text, refusal = _message_parts(choice)
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    if finish == "content_filter" and refusal is None:
        refusal = "content_filter"
    tokens = tokens_from_logprobs(choice.get("logprobs"))
    if tokens is None:
        if not ask.requested:
            reason = "not_requested"
        elif not ask.sent:
            reason = ask.reason_if_unsent
        else:
            reason = "endpoint_dropped"
        return unavailable_choice(index=index, text=text or "", finish_reason=finish, reason=reason, refusal=refusal)
    if ask.trim_to is not None:
        tokens = _trim(tokens, ask.trim_to)
    if text is None:
        text = text_from_tokens(tokens) if refusal is None else ""
    return choice_with_tokens(index=index, text=text, finish_reason=finish, tokens=tokens,
                              top_k=ask.top_k if ask.sent else None, refusal=refusal)


def completion_from_openai(payload: Any, ask: LogprobAsk, *, latency_s: float = 0.0,
                           dropped: tuple[str, ...] = ()) -> Completion:
    """A ``chat.completion`` (or ``text_completion``) body → Completion. Raises MalformedPayload."""
    if not isinstance(payload, dict):
        raise MalformedPayload("response body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedPayload("response has no choices")
    usage = payload.get("usage")
    usage = usage if type(usage) is dict else {}
    return build_completion([choice_from_openai(c, i, ask) for i, c in enumerate(choices)],
                            model_reported=payload.get("model"), input_tokens=count(usage.get("prompt_tokens")),
                            output_tokens=count(usage.get("completion_tokens")), latency_s=latency_s,
                            dropped=dropped, top_k=ask.top_k if ask.sent else None)
