"""What the inbox pages show instead of codes: contact names, channel names, times.

Times are shown in the tenant's zone in one format everywhere ("02/12/2026 10:05"): the server
writes it, and `inbox.js` writes the same format for what arrives later (`data-time-zone`).
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.models import Contact, Conversation

CHANNEL_LABELS = {
    "whatsapp": gettext_lazy("WhatsApp"),
    "webchat": gettext_lazy("Chat web"),
    "email": gettext_lazy("Correo electrónico"),
    "api": gettext_lazy("API"),
}
TIME_FORMAT = "%d/%m/%Y %H:%M"


def channel_label(channel: str) -> str:
    return str(CHANNEL_LABELS.get(channel, _("Otro canal")))


def channel_icon(channel: str) -> str:
    """The icon's name under `inbox/icons/` (one per known channel, a generic one else)."""
    return channel if channel in CHANNEL_LABELS else "other"


def _visitor_number(contact: Contact) -> int:
    """1 for the tenant's first anonymous web visitor, 2 for the next... (stable: by age)."""
    return (
        Contact.objects.for_tenant(contact.tenant_id)
        .filter(created_at__lte=contact.created_at, external_id__startswith="webchat:")
        .count()
    ) or 1


def contact_display_name(conversation: Conversation) -> str:
    """Name, else phone, else e-mail, else "Visitante web N" (never an opaque channel id)."""
    contact = conversation.contact
    if contact is not None:
        for value in (contact.name, contact.phone, contact.email):
            if value:
                return str(value)
        if conversation.channel != "webchat" and contact.external_id:
            return str(contact.external_id)
        if conversation.channel == "webchat":
            return _("Visitante web %(n)s") % {"n": _visitor_number(contact)}
    if conversation.channel == "webchat" or not conversation.contact_identifier:
        return _("Visitante web")
    return conversation.contact_identifier


def tenant_zone(conversation: Conversation) -> zoneinfo.ZoneInfo:
    name = getattr(conversation.tenant, "timezone", "") or "UTC"
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def time_text(value: datetime | None, zone: Any) -> str:
    """The one format of the inbox, in the tenant's zone; "" for no time."""
    if value is None:
        return ""
    return timezone.localtime(value, zone).strftime(TIME_FORMAT)
