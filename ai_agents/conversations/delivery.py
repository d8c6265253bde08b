"""Sending stored replies on their conversation's channel, with the handoff rule."""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from ai_agents.channels import ChannelAdapter, adapter_for
from ai_agents.models import Conversation, Delivery, Message
from ai_agents.services.inbox_events import inbox_event_publish
from erp.db import connection_release
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)


def bot_may_speak(conversation: Conversation, message: Message) -> bool:
    """The handoff rule, checked right before anything of the bot's leaves: the bot speaks on an
    active conversation, and on an escalated one only to say it escalated (its own escalation
    notice) while nobody holds it. A person's message (author set) and a customer notice
    (ai_agents.services.customer_notice) always go."""
    if message.author_id is not None or (message.metadata or {}).get("customer_notice"):
        return True  # a person's message, or the notice of what a person did
    if conversation.status == Conversation.Status.ACTIVE:
        return conversation.assigned_to_id is None
    return (
        conversation.status == Conversation.Status.ESCALATED
        and conversation.assigned_to_id is None
        and bool((message.metadata or {}).get("escalation_notice"))
    )


def _outbound(message: Message) -> bool:
    """A reply, or a customer notice (a system message the customer sees)."""
    if message.role == Message.Role.ASSISTANT:
        return True
    return message.role == Message.Role.SYSTEM and bool(
        (message.metadata or {}).get("customer_notice")
    )


def reply_deliver(message_id: Any) -> str:
    """Sends one stored outbound message. Returns its delivery status ("" for pulled channels,
    "suppressed" when the bot must keep quiet). Safe to call twice: a message already handed
    to the channel is not sent again."""
    message = (
        Message.objects.unscoped()
        .select_related("conversation__binding")
        .filter(pk=message_id)
        .first()
    )
    if message is None:
        return ""
    return loaded_reply_deliver(message)


def undelivered_replies(conversation: Conversation) -> list[Message]:
    """The conversation's replies not yet handed to its channel, oldest first, each with its
    conversation and binding as they are now (one read: `loaded_reply_deliver` takes them)."""
    return list(
        Message.objects.select_related("conversation__binding")
        .filter(
            conversation_id=conversation.pk,
            role=Message.Role.ASSISTANT,
            delivery_status="",
        )
        .order_by("created_at")
    )


def loaded_reply_deliver(message: Message) -> str:
    """`reply_deliver` of a message read with its conversation and binding (select_related)
    just before: the handoff rule is checked on that read."""
    if not _outbound(message):
        return ""
    if message.delivery_status:
        return message.delivery_status
    conversation = message.conversation
    adapter = adapter_for(conversation.channel)
    if adapter is None or conversation.binding is None:
        return ""
    messages = Message.objects.for_tenant(message.tenant_id).filter(pk=message.pk)
    if not bot_may_speak(conversation, message):
        messages.update(delivery_status=Delivery.Status.SUPPRESSED)
        logger.info(
            "channel.reply_suppressed",
            extra={"conversation_id": str(conversation.pk), "message_id": str(message.pk)},
        )
        return Delivery.Status.SUPPRESSED
    # Claim the send (only one caller passes from "" to pending), then hand it over. The
    # claim's time lets the sweep (conversations/delivery_sweep.py) send what a worker that
    # died before the hand-over left pending.
    claimed_at = timezone.now()
    claimed = messages.filter(delivery_status="").update(
        delivery_status=Delivery.Status.PENDING, delivery_claimed_at=claimed_at
    )
    message.delivery_claimed_at = claimed_at
    if not claimed:
        return Message.objects.for_tenant(message.tenant_id).get(pk=message.pk).delivery_status
    return claimed_send(message, adapter=adapter)


def claimed_send(message: Message, *, adapter: ChannelAdapter) -> str:
    """Hands a message whose send this caller claimed ("pending") to its channel and records
    the returned status."""
    conversation = message.conversation
    status = adapter.send(binding=conversation.binding, conversation=conversation, message=message)
    # Only over "pending": a status webhook may already have moved it further (delivered, read).
    Message.objects.for_tenant(message.tenant_id).filter(
        pk=message.pk, delivery_status=Delivery.Status.PENDING
    ).update(delivery_status=status)
    inbox_event_publish(
        tenant_id=message.tenant_id, conversation_id=conversation.pk, kind="delivery"
    )
    return status


def delivery_part(message: Message, part: int, *, channel: str) -> Delivery | None:
    """Part `part` of the message's delivery: made pending in one statement, or the row an
    earlier run made (one per message and part), to be sent only while still pending. None
    when, between two parts, the send turns out no longer this caller's (`claim_held`)."""
    if part and not claim_held(message):
        return None
    delivery = Delivery(tenant_id=message.tenant_id, message=message, channel=channel, part=part)
    statement = rows.insert_new_statement(
        delivery, on_conflict="ON CONFLICT (message_id, part) DO NOTHING"
    )
    with tenant_scope(message.tenant_id):  # whoever calls (row security)
        (outcome,) = rows.run_together([statement])
    if outcome.rows:
        delivery.pk = outcome.rows[0][0]
        rows.inserted([delivery])
        return delivery
    return Delivery.objects.for_tenant(message.tenant_id).get(message_id=message.pk, part=part)


def claim_held(message: Message) -> bool:
    """Whether the send this caller claimed (`delivery_claimed_at` as it set it) is still its
    own, renewing the claim: between the parts of a long reply, a send so slow that the sweep
    (delivery_sweep.py) took it over stops there, and one that makes progress is not taken."""
    claimed_at = message.delivery_claimed_at
    if claimed_at is None:
        return True  # a caller that claimed nothing
    now = timezone.now()
    held = (
        Message.objects.for_tenant(message.tenant_id)
        .filter(pk=message.pk, delivery_claimed_at=claimed_at)
        .update(delivery_claimed_at=now)
    )
    if held:
        message.delivery_claimed_at = now
    return bool(held)


def delivery_status_summary(statuses: list[str]) -> str:
    """A message's status from its parts': failed if any failed, else the least advanced."""
    order: list[str] = [
        Delivery.Status.PENDING,
        Delivery.Status.SENT,
        Delivery.Status.DELIVERED,
        Delivery.Status.READ,
    ]
    if not statuses:
        return ""
    if Delivery.Status.FAILED in statuses:
        return Delivery.Status.FAILED
    if Delivery.Status.SUPPRESSED in statuses:
        return Delivery.Status.SUPPRESSED
    return min(statuses, key=lambda s: order.index(s) if s in order else 0)


def typing_show(conversation: Conversation) -> bool:
    """Shows the customer that a person is answering, where the channel can (WhatsApp: their
    last message marked read with the typing indicator). Best effort: never raises; False
    when nothing was shown."""
    adapter = adapter_for(conversation.channel)
    if adapter is None or conversation.binding is None:
        return False
    last = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(
            conversation_id=conversation.pk,
            role=Message.Role.USER,
            channel_message_id__isnull=False,
        )
        .order_by("-created_at")
        .first()
    )
    if last is None:
        return False
    connection_release()  # no connection held while the channel answers
    try:
        adapter.typing(binding=conversation.binding, conversation=conversation, inbound=last)
    except Exception as exc:  # the indicator never blocks a reply
        logger.info("channel.typing_failed", extra={"error": type(exc).__name__})
        return False
    return True
