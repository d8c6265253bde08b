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


@shared_task(name="ai_agents.conversation_history_summarize")
def conversation_history_summarize(conversation_id: str, upto_message_id: str) -> int:
    """Real-time queue, after a reply: the summary of the history cut out of the prompt (see
    ai_agents/services/history_summary.py). Returns how many messages it covers."""
    from ai_agents.models import Conversation
    from ai_agents.services.history_summary import history_summary_generate

    conversation = Conversation.objects.unscoped().filter(pk=conversation_id).first()
    if conversation is None:
        return 0
    with tenant_scope(conversation.tenant_id):
        stored = history_summary_generate(
            conversation=conversation, upto_message_id=upto_message_id
        )
    return int(stored.get("count") or 0)
