"""Secrets never reach a log or an error: auth headers, `key`/`token`/... query parameters and
JSON fields, bearer and basic credentials in body excerpts."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-goog-api-key"}
)
SECRET_FIELDS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "code",
        "password",
        "secret",
    }
)
BODY_EXCERPT_CHARS = 2000


def redact_url(url: str) -> str:
    """The URL with user:password and secret query parameters replaced."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, REDACTED if k.lower() in SECRET_FIELDS else v) for k, v in pairs], safe="[]"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_json(value: Any) -> Any:
    """A copy of decoded JSON with the values of secret-named fields replaced, at any depth."""
    if isinstance(value, dict):
        return {
            k: REDACTED if str(k).lower() in SECRET_FIELDS else redact_json(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    return value


_FORM_SECRET = re.compile(
    r"(?i)\b(" + "|".join(sorted(SECRET_FIELDS, key=len, reverse=True)) + r")=([^&\s\"']+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")


def redact_body(raw: bytes, limit: int = BODY_EXCERPT_CHARS) -> str:
    """A short, redacted excerpt of a response body, for error messages (never for logs)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        text = json.dumps(redact_json(json.loads(text)), ensure_ascii=False)
    except ValueError:
        text = _FORM_SECRET.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return text if len(text) <= limit else text[:limit] + "…"
