"""Conversation lifecycle writes."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from ai_agents.models import Conversation

INACTIVITY_EXPIRY = timedelta(hours=24)  # RN-7


def _idle(now: datetime) -> Q:
    """RN-7: active, and no message for 24 h. Escalated conversations wait for a human."""
    return Q(status=Conversation.Status.ACTIVE, last_message_at__lt=now - INACTIVITY_EXPIRY)


def conversations_expire(*, now: datetime | None = None) -> int:
    """Marks idle conversations (`_idle`) as expired (all tenants: a maintenance task). The
    next message of that contact starts a new conversation. Returns how many expired."""
    now = now or timezone.now()
    return (
        Conversation.objects.unscoped()
        .filter(_idle(now))
        .update(status=Conversation.Status.EXPIRED, closed_at=now)
    )


def conversation_expire_if_idle(conversation: Conversation) -> bool:
    """The same rule at the door, for the conversation a message is about to join: expired
    now rather than at the beat task's next run (every 15 minutes). No query when the loaded
    row shows it is not idle."""
    last = conversation.last_message_at
    if conversation.status != Conversation.Status.ACTIVE or last is None:
        return False
    now = timezone.now()
    if now - last < INACTIVITY_EXPIRY:
        return False
    Conversation.objects.for_tenant(conversation.tenant_id).filter(
        _idle(now), pk=conversation.pk
    ).update(status=Conversation.Status.EXPIRED, closed_at=now)
    return True
