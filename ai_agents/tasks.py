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


# ignore_result: nobody waits on it, and with the Redis result backend every `delay()` would
# also subscribe to the result channel (~1.7 ms more per webhook acknowledgement).
@shared_task(name="ai_agents.channel_conversation_answer", ignore_result=True)
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
        results = conversation_answer_pending(conversation_id=conversation.pk)
        return [reply_deliver(r["reply"]["id"]) for r in results if r.get("reply")]
