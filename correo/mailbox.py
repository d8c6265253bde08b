"""The one seam between the secretary and a member's mailbox.

`mailbox_for(user, tenant)` gives a `Mailbox` (today: Zoho Mail through
`correo.zoho.client.ZohoMailClient`); tests point it at a fake. Zoho's typed errors become the
few this app reacts to: not connected (503, reconnect), unavailable (502), not found (told to
the model as data).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings

from correo.models import ZohoConnection
from erp.html_text import html_to_text
from erp.tenancy.models import Tenant

READ_LIMIT_CHARS = 4000
SUMMARY_CHARS = 150


class MailboxError(Exception):
    code = "mailbox_error"


class MailboxNotConnected(MailboxError):
    """No connection, Zoho not configured, or the refresh token was revoked: reconnect."""

    code = "mailbox_not_connected"


class MailboxUnavailable(MailboxError):
    """Zoho failed (5xx, rate limit, timeout) after the client's retries."""

    code = "mailbox_unavailable"


class MailboxNotFound(MailboxError):
    code = "mailbox_not_found"


@dataclass(frozen=True)
class MailItem:
    message_id: str
    folder_id: str
    de: str
    asunto: str
    fecha: str
    resumen: str

    def as_json(self) -> dict[str, str]:
        return {
            "messageId": self.message_id,
            "folderId": self.folder_id,
            "de": self.de,
            "asunto": self.asunto,
            "fecha": self.fecha,
            "resumen": self.resumen[:SUMMARY_CHARS],
        }


class Mailbox(Protocol):
    def search(
        self, *, query: str | None, sender: str | None, subject: str | None, limit: int = 10
    ) -> list[MailItem]: ...

    def read_text(self, *, message_id: str, folder_id: str) -> str:
        """The message as plain text, at most READ_LIMIT_CHARS characters."""
        ...

    def list_recent(self, *, since: datetime, limit: int = 200) -> list[MailItem]: ...

    def time_limit(self, seconds: float) -> None:
        """The calls that follow give up after at most `seconds` (connect and each read)."""
        ...


def _fecha(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    return "" if value is None else str(value)


def item_from_summary(summary: Any) -> MailItem:
    """A `correo.zoho.client.MailSummary` (or anything with its fields) as a MailItem. The
    client has already decoded entities once; they are not decoded again."""
    return MailItem(
        message_id=str(summary.message_id),
        folder_id=str(summary.folder_id),
        de=str(summary.de or ""),
        asunto=str(summary.asunto or ""),
        fecha=_fecha(summary.fecha),
        resumen=str(summary.resumen or "")[:SUMMARY_CHARS],
    )


class ZohoMailbox:
    """`Mailbox` over the Zoho client; translates its errors."""

    def __init__(self, client: Any, zoho_module: Any, html_to_text: Any) -> None:
        self.client = client
        self.zoho = zoho_module
        self.html_to_text = html_to_text

    def _translate(self, exc: Exception) -> MailboxError:
        zoho = self.zoho
        if isinstance(exc, zoho.ZohoNotConnected | zoho.ZohoAuthError):
            return MailboxNotConnected(type(exc).__name__)
        not_found = tuple(
            c for c in (zoho.ZohoNotFound, getattr(zoho, "ZohoBadRequest", None)) if c
        )
        if isinstance(exc, not_found):  # a wrong id from the model: told to it as data
            return MailboxNotFound(type(exc).__name__)
        return MailboxUnavailable(type(exc).__name__)

    def time_limit(self, seconds: float) -> None:
        limit = getattr(self.client, "time_limit", None)  # test stubs may have none
        if limit is not None:
            limit(seconds)

    def search(
        self, *, query: str | None, sender: str | None, subject: str | None, limit: int = 10
    ) -> list[MailItem]:
        try:
            found = self.client.search(query=query, sender=sender, subject=subject, limit=limit)
        except self.zoho.ZohoError as exc:
            raise self._translate(exc) from None
        return [item_from_summary(s) for s in found[:limit]]

    def read_text(self, *, message_id: str, folder_id: str) -> str:
        try:
            raw = self.client.read_html(message_id=message_id, folder_id=folder_id)
        except self.zoho.ZohoError as exc:
            raise self._translate(exc) from None
        return str(self.html_to_text(raw, limit=READ_LIMIT_CHARS))[:READ_LIMIT_CHARS]

    def list_recent(self, *, since: datetime, limit: int = 200) -> list[MailItem]:
        try:
            found = self.client.list_recent(since=since, limit=limit)
        except self.zoho.ZohoError as exc:
            raise self._translate(exc) from None
        return [item_from_summary(s) for s in found]


def connection_for(user: Any, tenant: Tenant) -> ZohoConnection | None:
    return ZohoConnection.objects.for_tenant(tenant).filter(owner=user).first()


def mailbox_connected(user: Any, tenant: Tenant) -> bool:
    connection = connection_for(user, tenant)
    return bool(settings.ZOHO_CLIENT_ID and connection is not None and connection.is_connected)


def mailbox_for(user: Any, tenant: Tenant) -> Mailbox:
    """The member's mailbox; raises MailboxNotConnected when there is none to use."""
    try:
        from correo.zoho import client as zoho
    except ImportError:  # the Zoho client is not installed in this build
        raise MailboxNotConnected("zoho client missing") from None
    connection = connection_for(user, tenant)
    if not settings.ZOHO_CLIENT_ID or connection is None or not connection.is_connected:
        raise MailboxNotConnected("not connected")
    return ZohoMailbox(zoho.ZohoMailClient(connection), zoho, html_to_text)
