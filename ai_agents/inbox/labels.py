"""What the inbox pages show instead of codes: channel icons and times (names and channel labels:
`rules.inbox_labels`).

Times are shown in the tenant's zone in one format everywhere ("02/12/2026 10:05"): the server
writes it, and `inbox.js` writes the same format for what arrives later (`data-time-zone`).
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime
from typing import Any

from django.utils import timezone

from ai_agents.models import Conversation
from ai_agents.rules.inbox_labels import CHANNELS, channel_label, contact_display_name

__all__ = ["channel_icon", "channel_label", "conversation_contact_name", "tenant_zone", "time_text"]

TIME_FORMAT = "%d/%m/%Y %H:%M"


def channel_icon(channel: str) -> str:
    """The icon's name under `inbox/icons/` (one per known channel, a generic one else)."""
    return channel if channel in CHANNELS else "other"


def conversation_contact_name(conversation: Conversation) -> str:
    """The name the inbox shows everywhere for this conversation's contact."""
    return contact_display_name(conversation.contact, fallback_key=conversation.pk)


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
