"""What the Zoho client returns (DTOs) and the defensive parsing of Zoho's JSON.

Zoho sends almost every value as a string (ids are 64-bit: always kept as strings), key sets vary
per row, the legacy format uses numbers and `receivedtime`, and subjects/summaries carry HTML
entities that are decoded exactly once here.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

RESUMEN_CHARS = 150
_INVISIBLE = re.compile(
    "[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class MailSummary:
    """One message as the secretary sees it: a search result."""

    message_id: str
    folder_id: str
    de: str
    asunto: str
    fecha: str  # ISO 8601, UTC
    resumen: str  # at most 150 characters


@dataclass(frozen=True)
class TokenGrant:
    """A successful answer of the token endpoint (never logged, never repr'd with values)."""

    access_token: str
    expires_in: int
    refresh_token: str = ""
    scope: str = ""
    api_domain: str = ""

    def __repr__(self) -> str:
        return f"TokenGrant(expires_in={self.expires_in}, scope={self.scope!r})"


@dataclass(frozen=True)
class ZohoAccount:
    account_id: str
    email: str
    is_default: bool


def clean_text(value: Any, *, limit: int | None = None) -> str:
    """Entities decoded once, invisible characters dropped, whitespace collapsed, cut at limit."""
    if value is None:
        return ""
    text = _SPACES.sub(" ", _INVISIBLE.sub("", html.unescape(str(value)))).strip()
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def as_id(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return ""
    return str(value).strip()


def received_at(row: dict[str, Any]) -> datetime | None:
    raw = row.get("receivedTime", row.get("receivedtime"))
    if raw in (None, ""):
        return None
    try:
        millis = int(str(raw).strip())
    except ValueError:
        return None
    try:
        return datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def mail_summary(row: dict[str, Any]) -> MailSummary | None:
    """A search/list row as a MailSummary, or None when it lacks the ids to read it."""
    message_id, folder_id = as_id(row.get("messageId")), as_id(row.get("folderId"))
    if not message_id or not folder_id:
        return None
    address = clean_text(row.get("fromAddress"))
    name = clean_text(row.get("sender"))
    if name and address and name.lower() != address.lower():
        de = f"{name} <{address}>"
    else:
        de = address or name
    when = received_at(row)
    return MailSummary(
        message_id=message_id,
        folder_id=folder_id,
        de=de,
        asunto=clean_text(row.get("subject")),
        fecha=when.isoformat().replace("+00:00", "Z") if when else "",
        resumen=clean_text(row.get("summary"), limit=RESUMEN_CHARS),
    )


def account_from(rows: Any) -> ZohoAccount | None:
    """The default account (or the first) from `GET /api/accounts` data."""
    if not isinstance(rows, list):
        return None
    accounts = []
    for row in rows:
        if not isinstance(row, dict) or not as_id(row.get("accountId")):
            continue
        email = row.get("primaryEmailAddress") or row.get("mailboxAddress") or ""
        accounts.append(
            ZohoAccount(
                account_id=as_id(row.get("accountId")),
                email=str(email),
                is_default=bool(row.get("isDefaultAccount")),
            )
        )
    if not accounts:
        return None
    return next((a for a in accounts if a.is_default), accounts[0])
