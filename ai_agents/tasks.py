from __future__ import annotations

import logging

from celery import shared_task

from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)


@shared_task(name="ai_agents.bulk_ingest_document")
def bulk_ingest_document(document_id: str) -> str:
    """Ingests one document (bulk queue). Returns its final status; "" if it is gone."""
    from ai_agents.models import Document
    from ai_agents.services.knowledge import document_ingest

    document = Document.objects.unscoped().filter(pk=document_id).first()
    if document is None:
        return ""
    with tenant_scope(document.tenant_id):
        return document_ingest(document=document).status


@shared_task(name="ai_agents.bulk_expire_conversations")
def bulk_expire_conversations() -> int:
    """Beat, every 15 minutes: RN-7, inactive conversations expire after 24 h."""
    from ai_agents.services.conversations import conversations_expire

    expired = conversations_expire()
    if expired:
        logger.info("conversations.expired", extra={"count": expired})
    return expired


@shared_task(name="ai_agents.conversation_escalated_notify")
def conversation_escalated_notify(conversation_id: str) -> dict[str, str]:
    """Tells the human team a conversation needs them (real-time queue). For now a structured
    log line the operators' alerting reads; the handoff issue adds e-mail and the inbox."""
    from ai_agents.models import Conversation

    conversation = Conversation.objects.unscoped().filter(pk=conversation_id).first()
    if conversation is None:
        return {}
    notice = {
        "conversation_id": str(conversation.pk),
        "tenant_id": str(conversation.tenant_id),
        "agent_id": str(conversation.agent_id),
        "reason": conversation.escalation_reason,
        "priority": conversation.escalation_priority,
    }
    logger.warning("conversation.escalated", extra=notice)
    return notice


@shared_task(name="ai_agents.channel_conversation_answer")
def channel_conversation_answer(conversation_id: str, message_id: str = "") -> list[str]:
    """Real-time queue: answers a conversation's stored channel messages in arrival order and
    sends the replies on its channel. Returns the delivery status of each reply sent."""
    from ai_agents.channels import adapter_for
    from ai_agents.channels.delivery import reply_deliver
    from ai_agents.models import Conversation, Message
    from ai_agents.pipeline.run import conversation_answer_pending

    conversation = (
        Conversation.objects.unscoped().select_related("binding").filter(pk=conversation_id).first()
    )
    if conversation is None:
        return []
    with tenant_scope(conversation.tenant_id):
        adapter = adapter_for(conversation.channel)
        inbound = Message.objects.filter(pk=message_id).first() if message_id else None
        if (
            adapter is not None
            and conversation.binding is not None
            and inbound is not None
            and "result" not in (inbound.metadata or {})
            and conversation.status == Conversation.Status.ACTIVE
        ):
            adapter.typing(binding=conversation.binding, conversation=conversation, inbound=inbound)
        conversation_answer_pending(conversation_id=conversation.pk)
        # Every reply of this conversation not yet handed over: this run's, and any left by a
        # worker that stopped between storing and sending.
        undelivered = (
            Message.objects.filter(
                conversation_id=conversation.pk,
                role=Message.Role.ASSISTANT,
                delivery_status="",
            )
            .order_by("created_at")
            .values_list("pk", flat=True)
        )
        return [reply_deliver(pk) for pk in undelivered]


@shared_task(name="ai_agents.channel_pending_sweep")
def channel_pending_sweep() -> int:
    """Beat, every minute: channel messages stored but not answered after a minute (the broker
    was down when they arrived, or a worker died) are queued again. Returns how many
    conversations were queued."""
    from datetime import timedelta

    from django.utils import timezone

    from ai_agents.models import Message

    now = timezone.now()
    conversation_ids = list(
        Message.objects.unscoped()
        .filter(
            role=Message.Role.USER,
            created_at__gte=now - timedelta(hours=24),
            created_at__lt=now - timedelta(minutes=1),
            conversation__binding__isnull=False,
        )
        .exclude(metadata__has_key="result")
        .values_list("conversation_id", flat=True)
        .distinct()[:500]
    )
    for conversation_id in conversation_ids:
        channel_conversation_answer.delay(str(conversation_id))
    if conversation_ids:
        logger.warning("channel.pending_requeued", extra={"count": len(conversation_ids)})
    return len(conversation_ids)
