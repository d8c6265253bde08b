"""Conversation lifecycle writes."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from ai_agents.models import Conversation

INACTIVITY_EXPIRY = timedelta(hours=24)  # RN-7


def conversations_expire(*, now: datetime | None = None) -> int:
    """Marks active conversations with no message for 24 h as expired (all tenants: a
    maintenance task). The next message of that contact starts a new conversation. Escalated
    conversations wait for a human and are left alone. Returns how many expired."""
    now = now or timezone.now()
    return (
        Conversation.objects.unscoped()
        .filter(status=Conversation.Status.ACTIVE, last_message_at__lt=now - INACTIVITY_EXPIRY)
        .update(status=Conversation.Status.EXPIRED, closed_at=now)
    )
