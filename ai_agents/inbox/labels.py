"""What the inbox pages show instead of codes: channel icons and times (names and channel labels:
`rules.inbox_labels`).

Times are shown in the tenant's zone in one format everywhere ("02/12/2026 10:05"): the server
writes it, and `inbox_conversation.js` writes the same format for what arrives later
(`data-time-zone`). So that nobody reads them in their own zone, every absolute time says its
zone: a title ("Hora de Europe/Madrid (UTC+1)") and, on the lease times ("hasta 10:20 UTC+1"),
a visible offset. The offset is the one at that moment (summer time included), the same in
every language; the server writes these words for the first render and the page's updates
alike (the script only places them), so there is one implementation.
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.models import Conversation
from ai_agents.rules.inbox_labels import CHANNELS, channel_label, contact_display_name

__all__ = [
    "channel_icon",
    "channel_label",
    "conversation_contact_name",
    "tenant_zone",
    "time_text",
    "time_zone_text",
    "zone_offset",
    "zone_title",
]

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


def zone_offset(value: datetime | None, zone: Any) -> str:
    """The zone's offset from UTC at `value` (now when None): "UTC", "UTC+1", "UTC-3",
    "UTC+5:30"."""
    moment = timezone.localtime(value or timezone.now(), zone)
    minutes = int((moment.utcoffset() or timedelta()).total_seconds() // 60)
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours}" + (f":{rest:02d}" if rest else "")


def zone_title(value: datetime | None, zone: Any) -> str:
    """The title of a time: which zone it is in ("Hora de Europe/Madrid (UTC+1)")."""
    return _("Hora de %(zone)s (%(offset)s)") % {
        "zone": str(zone),
        "offset": zone_offset(value, zone),
    }


def time_zone_text(value: datetime | None, zone: Any) -> str:
    """`time_text` with the offset after it ("02/12/2026 10:20 UTC+1"); "" for no time."""
    if value is None:
        return ""
    return f"{time_text(value, zone)} {zone_offset(value, zone)}"
