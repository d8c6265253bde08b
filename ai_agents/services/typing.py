"""Typing indicators, both ways, kept only in Redis (a short TTL: nothing to clean up).

The web chat visitor's widget pings while they type (`customer_typing_mark`): the staff pages
read `customer_typing` (the conversation's detail and inbox events) and get a "typing" event
when it starts. The inbox composer pings `POST /api/v1/conversations/{id}/typing`
(`staff_typing_mark`): the widget shows "escribiendo…" while it lasts; on WhatsApp the
customer's last message is marked read with the Cloud API's typing indicator (a task, at most
once per WHATSAPP_TYPING_EVERY_S: the indicator lasts 25 s or until the reply). Best effort
everywhere: Redis or the Graph API failing never blocks a reply.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache
from django.db import transaction

from ai_agents.models import Conversation
from ai_agents.services.inbox_events import inbox_event_publish
from erp.celery import enqueue

logger = logging.getLogger(__name__)

TYPING_TTL_S = 6
WHATSAPP_TYPING_EVERY_S = 20


def _key(who: str, conversation_id: Any) -> str:
    return f"typing:{who}:{conversation_id}"


def customer_typing_mark(*, tenant_id: Any, conversation_id: Any) -> None:
    """The customer types now; publishes "typing" when they start (not on every ping)."""
    try:
        started = cache.add(_key("customer", conversation_id), "1", TYPING_TTL_S)
        if not started:
            cache.touch(_key("customer", conversation_id), TYPING_TTL_S)
    except Exception as exc:
        logger.info("typing.unavailable", extra={"error": type(exc).__name__})
        return
    if started:
        inbox_event_publish(tenant_id=tenant_id, conversation_id=conversation_id, kind="typing")


def customer_typing(conversation_id: Any) -> bool:
    try:
        return bool(cache.get(_key("customer", conversation_id)))
    except Exception:
        return False


def staff_typing_mark(*, conversation: Conversation, name: str) -> None:
    """A staff member types a reply to this conversation."""
    try:
        cache.set(_key("staff", conversation.pk), name or "1", TYPING_TTL_S)
        indicator = conversation.channel == "whatsapp" and cache.add(
            _key("wa", conversation.pk), "1", WHATSAPP_TYPING_EVERY_S
        )
    except Exception as exc:
        logger.info("typing.unavailable", extra={"error": type(exc).__name__})
        return
    if indicator:
        conversation_id = str(conversation.pk)
        transaction.on_commit(lambda: enqueue("ai_agents.channel_typing_show", conversation_id))


def staff_typing(conversation_id: Any) -> bool:
    try:
        return bool(cache.get(_key("staff", conversation_id)))
    except Exception:
        return False


def whatsapp_typing_due(conversation_id: Any) -> bool:
    """True (and remembered) when no indicator went out in the last WHATSAPP_TYPING_EVERY_S."""
    try:
        return bool(cache.add(_key("wa", conversation_id), "1", WHATSAPP_TYPING_EVERY_S))
    except Exception:
        return True
