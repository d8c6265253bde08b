"""Sending stored replies on their conversation's channel, with the handoff rule."""

from __future__ import annotations

import logging
from typing import Any

from ai_agents.channels import adapter_for
from ai_agents.models import Conversation, Delivery, Message

logger = logging.getLogger(__name__)


def bot_may_speak(conversation: Conversation, message: Message) -> bool:
    """The handoff rule, checked right before anything of the bot's leaves: the bot speaks on an
    active conversation, and on an escalated one only to say it escalated (its own escalation
    notice) while nobody holds it. A person's message (author set) always goes."""
    if message.author_id is not None:
        return True
    if conversation.status == Conversation.Status.ACTIVE:
        return conversation.assigned_to_id is None
    return (
        conversation.status == Conversation.Status.ESCALATED
        and conversation.assigned_to_id is None
        and bool((message.metadata or {}).get("escalation_notice"))
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
    if message is None or message.role != Message.Role.ASSISTANT:
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
    # Claim the send (only one caller passes from "" to pending), then hand it over.
    if not messages.filter(delivery_status="").update(delivery_status=Delivery.Status.PENDING):
        return Message.objects.for_tenant(message.tenant_id).get(pk=message.pk).delivery_status
    status = adapter.send(binding=conversation.binding, conversation=conversation, message=message)
    # Only over "pending": a status webhook may already have moved it further (delivered, read).
    messages.filter(delivery_status=Delivery.Status.PENDING).update(delivery_status=status)
    return status


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
