"""Reading OpenAI Chat Completions and Anthropic Messages requests (pure), validated the way the
real APIs validate them, with their error wording where it is known."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from probe.sim._personas import Persona, persona_for_model

MAX_N = 128
MAX_TOP_LOGPROBS = 20


class RequestError(Exception):
    """A request the API would reject: HTTP status, message, offending parameter, error code."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


@dataclass(frozen=True, slots=True)
class SimRequest:
    """What the simulator needs from a request, whichever API it came through."""

    model: str
    persona: Persona
    prompt: str  # content of the last user message
    system: str | None  # the system prompt (system/developer messages, Anthropic's 'system'), stripped
    prompt_tokens: int
    n: int
    temperature: float
    logprobs: bool
    top_logprobs: int
    max_tokens: int | None
    seed: int | None
    stops: tuple[str, ...]

    @property
    def speaker(self) -> Persona:
        """The persona as it reports under this request's prompt (its system-prompted form when the
        request has a system prompt)."""
        return self.persona.prompted(self.system is not None)


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or "type" not in part:
                raise RequestError(400, f"{where}[{i}]: expected an object with a 'type'", where)
            if part["type"] == "text":
                if not isinstance(part.get("text"), str):
                    raise RequestError(400, f"{where}[{i}].text: expected a string", where)
                parts.append(part["text"])
        return "\n".join(parts)
    if content is None:
        return ""
    raise RequestError(400, f"{where}: expected a string or a list of content parts", where)


def _number(obj: dict[str, Any], name: str, lo: float, hi: float, default: float) -> float:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RequestError(400, f"Invalid type for '{name}': expected a number.", name, "invalid_type")
    if not lo <= value <= hi:
        raise RequestError(400, f"Invalid '{name}': {value} is not between {lo:g} and {hi:g}.", name,
                           "invalid_value")
    return float(value)


def _integer(obj: dict[str, Any], name: str, lo: int, hi: int | None) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(400, f"Invalid type for '{name}': expected an integer.", name, "invalid_type")
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise RequestError(400, f"Invalid '{name}': integer must be {bound}, got {value}.", name,
                           "invalid_value")
    return value


def _stops(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise RequestError(400, f"Invalid type for '{name}': expected a string or a list of strings.", name)


def _persona(model: Any) -> tuple[str, Persona]:
    if not isinstance(model, str) or not model:
        raise RequestError(400, "you must provide a model parameter", "model")
    persona = persona_for_model(model)
    if persona is None:
        raise RequestError(404, f"The model `{model}` does not exist or you do not have access to it.",
                           "model", "model_not_found")
    return model, persona


_SYSTEM_ROLES = ("system", "developer")


def _prompt(messages: Any, roles: tuple[str, ...]) -> tuple[str, str | None, int]:
    """The last user message, the system prompt (system/developer messages joined by a blank line,
    as probe's Anthropic adapter joins them; None when blank) and the estimated prompt tokens."""
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty array.", "messages")
    prompt = None
    system: list[str] = []
    chars = 0
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in roles:
            raise RequestError(400, f"messages[{i}].role: expected one of {', '.join(roles)}", "messages")
        text = _text_of(m.get("content"), f"messages[{i}].content")
        chars += len(text)
        if m["role"] == "user":
            prompt = text
        elif m["role"] in _SYSTEM_ROLES:
            system.append(text)
    if prompt is None:
        raise RequestError(400, "messages: at least one message must have the role 'user'", "messages")
    return prompt, "\n\n".join(system).strip() or None, chars // 4 + 4 * len(messages) + 3


def parse_openai(obj: Any) -> SimRequest:
    """Validate an OpenAI ``/v1/chat/completions`` body."""
    if not isinstance(obj, dict):
        raise RequestError(400, "The request body must be a JSON object.")
    model, persona = _persona(obj.get("model"))
    if obj.get("stream"):
        raise RequestError(400, "Streaming is not supported by probe's simulator; send stream: false.", "stream",
                           "unsupported_parameter")
    prompt, system, prompt_tokens = _prompt(obj.get("messages"),
                                            ("system", "developer", "user", "assistant", "tool"))
    logprobs = obj.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise RequestError(400, "Invalid type for 'logprobs': expected a boolean.", "logprobs", "invalid_type")
    top = _integer(obj, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if top is not None and not logprobs:
        raise RequestError(400, "Invalid value for 'top_logprobs': 'logprobs' must be set to true when "
                           "'top_logprobs' is used.", "top_logprobs", "invalid_value")
    max_tokens = _integer(obj, "max_completion_tokens", 1, None)
    if max_tokens is None:
        max_tokens = _integer(obj, "max_tokens", 1, None)
    n = _integer(obj, "n", 1, MAX_N) or 1
    seed = obj.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError(400, "Invalid type for 'seed': expected an integer.", "seed", "invalid_type")
    _number(obj, "top_p", 0.0, 1.0, 1.0)
    return SimRequest(model=model, persona=persona, prompt=prompt, system=system, prompt_tokens=prompt_tokens, n=n,
                      temperature=_number(obj, "temperature", 0.0, 2.0, 1.0), logprobs=bool(logprobs),
                      top_logprobs=top or 0, max_tokens=max_tokens, seed=seed,
                      stops=_stops(obj.get("stop"), "stop"))


def parse_anthropic(obj: Any) -> SimRequest:
    """Validate an Anthropic ``/v1/messages`` body (no logprobs, no n, temperature 0–1)."""
    if not isinstance(obj, dict):
        raise RequestError(400, "The request body must be a JSON object.")
    model, persona = _persona(obj.get("model"))
    if obj.get("stream"):
        raise RequestError(400, "stream: streaming is not supported by probe's simulator", "stream")
    max_tokens = obj.get("max_tokens")
    if max_tokens is None:
        raise RequestError(400, "max_tokens: Field required", "max_tokens")
    checked = _integer(obj, "max_tokens", 1, None)
    system = None
    if obj.get("system") is not None:
        system = _text_of(obj["system"], "system").strip() or None
    prompt, _, prompt_tokens = _prompt(obj.get("messages"), ("user", "assistant"))
    if system is not None:
        prompt_tokens += len(system) // 4
    return SimRequest(model=model, persona=persona, prompt=prompt, system=system, prompt_tokens=prompt_tokens, n=1,
                      temperature=_number(obj, "temperature", 0.0, 1.0, 1.0), logprobs=False, top_logprobs=0,
                      max_tokens=checked, seed=None, stops=_stops(obj.get("stop_sequences"), "stop_sequences"))
