"""What one inbox card shows, in words: the contact's name, the channel's name, the status,
priority and reason, WhatsApp's 24-hour window, who holds it, the waiting time and the times in
the tenant's zone (the format of the conversation page), the unread count and the last message.
The list page, its refresh and the contact page render these through one template
(`inbox/_cards.html`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.utils import timezone
from django.utils.timesince import timesince

from ai_agents.inbox.labels import channel_icon, time_text, time_zone_text, zone_title
from ai_agents.models import Conversation
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.rules.inbox_labels import channel_label, contact_display_name
from ai_agents.rules.whatsapp_window import window_is_open, window_label
from ai_agents.services import handoff


@dataclass(frozen=True)
class When:
    iso: str
    label: str
    title: str = ""  # the zone it is in ("Hora de Europe/Madrid (UTC+1)")
    text: str = ""  # the label with its offset ("02/12/2026 10:20 UTC+1")


def tenant_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ValueError, KeyError):
        return ZoneInfo("UTC")


def when(value: datetime | None, zone: ZoneInfo) -> When | None:
    """A time in the tenant's zone, in the inbox's one format (that of the conversation page)."""
    if value is None:
        return None
    return When(
        iso=timezone.localtime(value, zone).isoformat(),
        label=time_text(value, zone),
        title=zone_title(value, zone),
        text=time_zone_text(value, zone),
    )


def card_fields(conversation: Conversation) -> dict[str, Any]:
    """The template's view of one conversation (annotated by the inbox selector)."""
    zone = tenant_zone(conversation.tenant.timezone)
    escalation = conversation_escalation(conversation) or {}
    holder = handoff.conversation_holder(conversation)
    # unanswered by a person, whoever holds it: the waiting tab's condition
    waiting = handoff.conversation_waiting_since(conversation)
    unread = getattr(conversation, "unread_count", None) or 0
    contact = conversation.contact if conversation.contact_id else None
    return {
        "id": str(conversation.pk),
        "contact_id": str(contact.pk) if contact is not None else "",
        "contact_name": contact_display_name(contact, fallback_key=conversation.pk),
        "channel": conversation.channel,
        "channel_label": channel_label(conversation.channel),
        "channel_icon": channel_icon(conversation.channel),
        "agent_name": conversation.agent.name if conversation.agent_id else "",
        "status": conversation.status,
        "status_label": str(conversation.get_status_display()),
        "priority": conversation.escalation_priority,
        "priority_label": escalation.get("priority_label", ""),
        "reason_label": escalation.get("reason_label", ""),
        "detail": escalation.get("detail", ""),
        "holder": holder.name if holder else "",
        "holder_until": when(holder.until, zone) if holder else None,
        "waiting_since": when(waiting, zone),
        "waiting_for": timesince(waiting) if waiting else "",
        "last_message_at": when(conversation.last_message_at, zone),
        "window_label": window_label(conversation),  # WhatsApp's 24 h, as on its page
        "window_open": window_is_open(conversation),
        "preview": getattr(conversation, "last_message_preview", None) or "",
        "unread": int(unread),
        "rating": conversation.satisfaction_rating,
        "tenant_name": conversation.tenant.name,
    }


def cards_fields(conversations: list[Conversation]) -> list[dict[str, Any]]:
    return [card_fields(c) for c in conversations]
