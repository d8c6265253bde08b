"""The model-made summary of an escalated conversation, for the people who take it over.

The engine stores an extractive summary with the escalation (no model on the reply path,
`ai_agents.rules.escalation_labels.summary_extractive`). When the agent has a real model, the
notifying Celery task (`ai_agents.conversation_escalated_notify`) asks it for a better one
BEFORE telling the team: the messages are read, the database connection is given back, the
model is called with a short deadline (ESCALATION_SUMMARY_RETRY), and the summary is written
only if the escalation is still the same one. If the model fails or is the offline one, the
extractive summary stands.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _

from ai_agents.models import Agent, Conversation, Message
from erp.db import connection_release
from erp.llm.errors import LlmError
from erp.llm.gateway import CallContext, RetryPolicy, get_provider, llm_generate
from erp.llm.types import LlmRequest
from erp.llm.types import Message as LlmMessage

logger = logging.getLogger(__name__)

SUMMARY_MESSAGES = 20  # the last messages the model reads
SUMMARY_MAX_CHARS = 800
# Well inside the notifying task's soft limit (60 s): the e-mail still goes out in time.
ESCALATION_SUMMARY_RETRY = RetryPolicy(
    timeout_s=15.0, attempts=2, base_delay_s=1.0, factor=2.0, deadline_s=25.0
)


def _transcript(conversation: Conversation) -> str:
    rows = list(
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation, role__in=["user", "assistant"])
        .order_by("-created_at", "-id")
        .values_list("role", "content")[:SUMMARY_MESSAGES]
    )
    names = {"user": _("Cliente"), "assistant": _("Asistente")}
    return "\n".join(f"{names[role]}: {content}" for role, content in reversed(rows))


def _request(agent: Agent, transcript: str) -> LlmRequest:
    system = _(
        "Resume para la persona del equipo que va a atender al cliente, en dos o tres frases "
        "y en el idioma de esta instrucción: qué quiere el cliente, qué datos ha dado y por "
        "qué necesita a una persona. Solo el resumen, sin saludos."
    )
    return LlmRequest(
        messages=[LlmMessage(role="user", content=transcript)],
        system=system,
        temperature=0.2,
        max_output_tokens=300,
        model=agent.model or None,
    )


def summary_from_model(conversation: Conversation, language: str) -> str | None:
    """The model's summary of the conversation (in `language`), or None: no real model, or
    it failed. Holds no connection while the model works."""
    agent = conversation.agent
    provider = get_provider(None if agent.provider == Agent.Provider.DEFAULT else agent.provider)
    if provider.name == "offline":
        return None
    with translation.override(language):
        transcript = _transcript(conversation)
        if not transcript:
            return None
        request = _request(agent, transcript)
    context = CallContext(
        tenant=conversation.tenant, agent_id=agent.pk, conversation_id=conversation.pk
    )
    connection_release()  # no connection waits on the model
    try:
        result = llm_generate(
            request, context=context, provider=provider, retry=ESCALATION_SUMMARY_RETRY
        )
    except LlmError as exc:
        logger.warning("escalation_summary.model_failed", extra={"error": type(exc).__name__})
        return None
    text = result.text.strip()
    return text[:SUMMARY_MAX_CHARS] or None


def escalation_summary_improve(conversation: Conversation, language: str) -> dict[str, Any]:
    """Replaces the stored extractive summary by the model's when there is one; returns the
    conversation's escalation_info (updated on `conversation` too). Written only while the
    escalation is the one summarised (same `at`)."""
    info: dict[str, Any] = dict(conversation.escalation_info or {})
    if not info.get("at") or info.get("summary_source") == "model":
        return info
    if not conversation.agent.is_active:  # switched off: no model calls on its behalf
        return info
    text = summary_from_model(conversation, language)
    if text is None:
        return info
    info.update(summary=text, summary_source="model")
    updated = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk, escalation_info__at=info["at"])
        .update(escalation_info=info)
    )
    if updated:
        conversation.escalation_info = info
    return dict(conversation.escalation_info or {})
