"""The customer's rating (1-5) and comment at the close of a conversation.

`conversation_rate` stores it once per conversation (a conditional UPDATE: a second rating,
or a retry, changes nothing and raises `AlreadyRated`). The web chat's survey calls it; on
WhatsApp and e-mail the customer answers the offer the close notice carried
(ai_agents/services/customer_notice.py) and `rating_reply_take` reads that answer before the
pipeline would: a bare "4" (or WhatsApp's list/button reply `rating:4`) within
RATING_REPLY_WINDOW of the offer is the rating, stored on the closed conversation with the
customer's message (never answered by the bot); on WhatsApp the next text within
COMMENT_WINDOW is the comment (`feedback_text`). Webhook redeliveries find the stored message.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from ai_agents.models import Conversation, Message
from ai_agents.services import customer_notice
from ai_agents.services.inbox_events import inbox_event_publish
from erp.api.errors import ServiceError

logger = logging.getLogger(__name__)

FEEDBACK_TEXT_MAX_CHARS = 2000
RATING_REPLY_WINDOW = timedelta(hours=24)
COMMENT_WINDOW = timedelta(minutes=10)
_BARE_NUMBER = re.compile(r"^\s*([1-5])\s*(?:/\s*5)?\s*[.!⭐★]*\s*$")


class RatingError(ServiceError):
    code = "validation_error"
    status = 400


class AlreadyRated(RatingError):
    code = "already_rated"
    status = 409


class RatingUnavailable(RatingError):
    code = "rating_unavailable"
    status = 409


def rating_clean(rating: Any, text: Any) -> tuple[int, str]:
    """A whole number 1-5 and a comment of at most FEEDBACK_TEXT_MAX_CHARS, or RatingError."""
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        raise RatingError(_("La valoración debe ser un número entero del 1 al 5."), field="rating")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise RatingError(_("El comentario debe ser un texto."), field="text")
    if len(text) > FEEDBACK_TEXT_MAX_CHARS:
        raise RatingError(
            _("El comentario admite como máximo %(n)s caracteres.")
            % {"n": FEEDBACK_TEXT_MAX_CHARS},
            field="text",
        )
    return rating, text.strip()


def conversation_rate(*, conversation: Conversation, rating: Any, text: Any = "") -> None:
    """Stores the rating (and comment) once; AlreadyRated when it was rated before."""
    rating, text = rating_clean(rating, text)
    updated = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk, satisfaction_rating__isnull=True)
        .update(satisfaction_rating=rating, feedback_text=text)
    )
    if not updated:
        raise AlreadyRated(_("Esta conversación ya tiene una valoración."))
    inbox_event_publish(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, kind="rating"
    )
    logger.info("rating.stored", extra={"conversation_id": str(conversation.pk), "rating": rating})


# --- answers on WhatsApp and e-mail ----------------------------------------------------------


def rating_from_reply(text: str, metadata: Any) -> int | None:
    """The rating a customer's answer gives: a bare number 1-5, or a list/button reply whose
    id is `rating:N`. None for anything else."""
    interactive = (metadata or {}).get("interactive") if isinstance(metadata, dict) else None
    if isinstance(interactive, dict):
        found = re.fullmatch(r"rating:([1-5])", str(interactive.get("id") or ""))
        if found:
            return int(found.group(1))
    found = _BARE_NUMBER.match(text or "")
    return int(found.group(1)) if found else None


def _comment_key(tenant_id: Any, agent_id: Any, thread_id: str) -> str:
    return f"rating-comment:{tenant_id}:{agent_id}:{thread_id}"[:240]


def _comment_window_open(key: str) -> bool:
    try:
        return bool(cache.get(key))
    except Exception:  # Redis down: the comment goes to the bot like any message
        return False


def rating_reply_take(
    *, binding: Any, inbound: Any, comments: bool = True
) -> tuple[Message, bool] | None:
    """The customer's answer to a rating offer, stored on the closed conversation (message
    and rating or comment); None when this message is not one (the pipeline takes it).
    `comments=False`: ratings only (the caller asks again for a comment when the thread has
    no open conversation: a comment window is looked up in Redis only then)."""
    if inbound.channel not in customer_notice.PUSH_CHANNELS:
        return None
    if (inbound.metadata or {}).get("auto_reply"):
        return None  # an out-of-office answer rates nothing
    thread_id = str(inbound.thread_id or inbound.contact.get("external_id") or "")
    rating = rating_from_reply(inbound.text, inbound.metadata)
    key = _comment_key(binding.tenant_id, binding.agent_id, thread_id)
    if rating is None and not (
        comments and inbound.channel == "whatsapp" and _comment_window_open(key)
    ):
        return None  # the common case: no database read
    latest = (
        Conversation.objects.for_tenant(binding.tenant_id)
        .filter(
            agent_id=binding.agent_id, channel=inbound.channel, channel_conversation_id=thread_id
        )
        .order_by("-started_at")
        .first()
    )
    if latest is None or latest.status != Conversation.Status.CLOSED:
        return None
    existing = _stored(latest, inbound)
    if existing is not None:
        return existing, False  # a redelivery
    if rating is not None and _offer_open(latest) and latest.satisfaction_rating is None:
        return _rating_store(latest, inbound, rating, key)
    if rating is None and latest.satisfaction_rating is not None and not latest.feedback_text:
        return _comment_store(latest, inbound, key)
    return None


def _offer_open(conversation: Conversation) -> bool:
    offer = (conversation.channel_data or {}).get("rating_offer") or {}
    at = parse_datetime(str(offer.get("at") or "")) if isinstance(offer, dict) else None
    return isinstance(at, datetime) and timezone.now() - at < RATING_REPLY_WINDOW


def _stored(conversation: Conversation, inbound: Any) -> Message | None:
    if not inbound.channel_message_id:
        return None
    return (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(agent_id=conversation.agent_id, channel_message_id=inbound.channel_message_id)
        .first()
    )


def _reply_store(
    conversation: Conversation, inbound: Any, result: dict[str, Any]
) -> Message | None:
    now = timezone.now()
    try:
        with transaction.atomic():
            message = Message.objects.for_tenant(conversation.tenant_id).create(
                tenant_id=conversation.tenant_id,
                conversation_id=conversation.pk,
                agent_id=conversation.agent_id,
                role=Message.Role.USER,
                content=inbound.text,
                channel_message_id=inbound.channel_message_id or None,
                # "result": answered (never picked up by the pending sweep)
                metadata={"channel_metadata": dict(inbound.metadata or {}), "result": result},
                created_at=now,
            )
            Conversation.objects.for_tenant(conversation.tenant_id).filter(
                pk=conversation.pk
            ).update(
                last_inbound_at=now,
                customer_messages=F("customer_messages") + 1,
                first_customer_at=Coalesce("first_customer_at", Value(now)),
            )
    except IntegrityError:
        return None
    conversation.last_inbound_at = now
    return message


def _rating_store(
    conversation: Conversation, inbound: Any, rating: int, key: str
) -> tuple[Message, bool] | None:
    """The message first: its unique channel id makes a concurrent redelivery the duplicate
    (it finds this row), never a second rating attempt nor a message for the bot."""
    message = _reply_store(conversation, inbound, {"rating_reply": rating})
    if message is None:
        existing = _stored(conversation, inbound)
        return None if existing is None else (existing, False)
    try:
        conversation_rate(conversation=conversation, rating=rating)
    except AlreadyRated:  # another answer won at the same time: this one is kept, unanswered
        return message, True
    if inbound.channel == "whatsapp":
        try:
            cache.set(key, "1", int(COMMENT_WINDOW.total_seconds()))
        except Exception as exc:
            logger.warning("rating.comment_window_unset", extra={"error": type(exc).__name__})
        customer_notice.customer_notice_post(
            conversation=conversation, event=customer_notice.RATING_THANKS
        )
    return message, True


def _comment_store(
    conversation: Conversation, inbound: Any, key: str
) -> tuple[Message, bool] | None:
    text = str(inbound.text or "").strip()[:FEEDBACK_TEXT_MAX_CHARS]
    if not text:
        return None
    message = _reply_store(conversation, inbound, {"rating_comment": True})
    if message is None:
        existing = _stored(conversation, inbound)
        return None if existing is None else (existing, False)
    Conversation.objects.for_tenant(conversation.tenant_id).filter(
        pk=conversation.pk, feedback_text=""
    ).update(feedback_text=text)
    try:
        cache.delete(key)
    except Exception as exc:
        logger.warning("rating.comment_window_kept", extra={"error": type(exc).__name__})
    inbox_event_publish(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, kind="rating"
    )
    customer_notice.customer_notice_post(
        conversation=conversation, event=customer_notice.COMMENT_THANKS
    )
    return message, True
