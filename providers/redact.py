"""Keeping secrets out of every string that leaves an adapter.

A :class:`Redactor` knows the key strings in use and scrubs them, plus anything that looks
like a credential (``Authorization`` values, ``api-key``/``x-api-key`` headers, ``key=`` query
parameters), from error text before it reaches a CallFailure, a log line or an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

MASK = "[redacted]"

_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(bearer\s+|basic\s+)?[^\s\"',}]+"),
    re.compile(r"(?i)((?:x-)?(?:api|goog-api)[-_]key[\"']?\s*[:=]\s*[\"']?)[^\s\"',}&]+"),
    re.compile(r"(?i)([?&](?:key|api[-_]?key|access_token|token)=)[^&\s\"']+"),
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
)


# A Python traceback trailer some servers append to error text (llama-cpp-python's validation
# errors: 'File "/…/site-packages/llama_cpp/server/app.py", line 376, in create_chat_completion'):
# it tells the reader nothing and discloses the server's file layout.
_SERVER_TRACE = re.compile(r'\s*File "[^"]*", line \d+(?:, in [\w.<>]+)?')
SERVER_TRACE_MASK = " [server traceback removed]"


class Redactor:
    """Scrubs known secrets and credential-shaped substrings from text."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is masked whole.
        found = {s for s in secrets if s and len(s) >= 4}
        self._secrets: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"

    def add(self, secret: str | None) -> None:
        """Also mask ``secret`` from now on."""
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets = tuple(sorted((*self._secrets, secret), key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        for pattern in _PATTERNS:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        return _SERVER_TRACE.sub(SERVER_TRACE_MASK, text)


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment: safe for keys, reports and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def url_secrets(url: str) -> list[str]:
    """Credentials embedded in a URL (user info), to be masked like keys."""
    parts = urlsplit(url)
    return [s for s in (parts.password, parts.username) if s]
