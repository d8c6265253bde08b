"""WhatsApp's 24-hour customer-service window: free-form messages (text, interactive) only
within 24 hours of the customer's last message; outside it, only an approved template. Pure:
derived from `Conversation.last_inbound_at`, stored with every inbound message. Also its words
in the inbox: the list's cards and the conversation page's countdown say the same."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext_lazy

WINDOW = timedelta(hours=24)
CHANNEL = "whatsapp"
OPEN_STATUSES = ("active", "escalated")  # Conversation.OPEN_STATUSES (rules read no model)
WINDOW_LEFT = gettext_lazy("Ventana: %(h)s h %(m)s min")
WINDOW_CLOSED = gettext_lazy("Ventana cerrada — solo plantillas")


def window_closes_at(conversation: Any) -> datetime | None:
    """When the window closes (None: not a WhatsApp conversation, or no customer message)."""
    last = getattr(conversation, "last_inbound_at", None)
    if conversation.channel != CHANNEL or last is None:
        return None
    closes: datetime = last + WINDOW
    return closes


def window_is_open(conversation: Any, *, now: datetime | None = None) -> bool:
    """True on other channels (no window); on WhatsApp, within 24 h of the last inbound."""
    if conversation.channel != CHANNEL:
        return True
    closes = window_closes_at(conversation)
    return closes is not None and (now or timezone.now()) < closes


def window_minutes_left(conversation: Any, *, now: datetime | None = None) -> int | None:
    """Whole minutes until the window closes, rounded up (the page's countdown rounds the
    same way); 0 once closed or before any customer message; None on other channels."""
    if conversation.channel != CHANNEL:
        return None
    closes = window_closes_at(conversation)
    left = (closes - (now or timezone.now())).total_seconds() if closes else 0.0
    return max(0, math.ceil(left / 60))


def window_label(conversation: Any, *, now: datetime | None = None) -> str:
    """The window in words for an open WhatsApp conversation ("Ventana: 3 h 12 min",
    "Ventana cerrada — solo plantillas"); "" on other channels and once the conversation is
    closed or expired (nothing can be sent to it then, not even a template)."""
    minutes = window_minutes_left(conversation, now=now)
    if minutes is None or getattr(conversation, "status", "") not in OPEN_STATUSES:
        return ""
    if not minutes:
        return str(WINDOW_CLOSED)
    return str(WINDOW_LEFT) % {"h": minutes // 60, "m": minutes % 60}
