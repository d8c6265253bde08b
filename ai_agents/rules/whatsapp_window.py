"""WhatsApp's 24-hour customer-service window: free-form messages (text, interactive) only
within 24 hours of the customer's last message; outside it, only an approved template. Pure:
derived from `Conversation.last_inbound_at`, stored with every inbound message."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

WINDOW = timedelta(hours=24)
CHANNEL = "whatsapp"


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
