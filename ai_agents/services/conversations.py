"""Conversation lifecycle writes."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from ai_agents.models import Conversation

INACTIVITY_EXPIRY = timedelta(hours=24)  # RN-7


def _claim_holds(now: datetime) -> Q:
    """A person holds the conversation and their lease still runs."""
    return Q(assigned_to__isnull=False, claim_expires_at__gt=now)


def _idle(now: datetime) -> Q:
    """RN-7: open (active, or escalated and waiting for a person), no message for 24 h, and
    nobody holding it under a lease that still runs (a claim keeps it open)."""
    return Q(
        status__in=Conversation.OPEN_STATUSES, last_message_at__lt=now - INACTIVITY_EXPIRY
    ) & ~_claim_holds(now)


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
    if conversation.status not in Conversation.OPEN_STATUSES or last is None:
        return False
    now = timezone.now()
    if now - last < INACTIVITY_EXPIRY:
        return False
    held_until = conversation.claim_expires_at
    if conversation.assigned_to_id is not None and held_until is not None and held_until > now:
        return False
    Conversation.objects.for_tenant(conversation.tenant_id).filter(
        _idle(now), pk=conversation.pk
    ).update(status=Conversation.Status.EXPIRED, closed_at=now)
    return True
