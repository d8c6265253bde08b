"""Summaries of the history cut out of the prompt (strategies `summarize` and `smart`).

Why asynchronous: a summary is one more model call (seconds with a real model), and the
message that first needs it can do without: it is sent with what the truncation keeps, and a
realtime Celery task (`ai_agents.conversation_history_summarize`, enqueued on commit) writes
the summary to `Conversation.history_summary` = {"text", "upto_message_id", "count"}. From the
next message on the prompt carries it, while the last message it covers is still among the
cut ones; as more is cut it keeps being used, and once REFRESH_AFTER cut messages are newer
than it a refresh is enqueued, which summarises the previous summary plus the newly cut
messages (bounded cost, not the whole conversation).

The summary goes through the gateway (a `llm_request` usage row for the conversation); with
the offline provider, or when the model fails, an extractive summary (the start of each cut
message) stands in.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils.translation import gettext as _

from ai_agents.models import Agent, Conversation, Message
from erp.celery import enqueue
from erp.llm.errors import LlmError
from erp.llm.gateway import AGENTS, CallContext, get_provider, llm_generate
from erp.llm.types import LlmRequest
from erp.llm.types import Message as LlmMessage

logger = logging.getLogger(__name__)

MAX_SUMMARY_CHARS = 1500
EXTRACT_CHARS = 160  # per message, extractive fallback
SCHEDULE_DEDUP_S = 120
# Cut messages newer than the summary before it is refreshed: one summary call per few
# exchanges, not one per message, in a long conversation.
REFRESH_AFTER = 6


def summary_usable(cached: Any, cut_ids: Sequence[str]) -> str | None:
    """The cached summary's text when it covers a prefix of the cut messages (its last message
    is one of them), else None."""
    if not isinstance(cached, dict) or not cached.get("text"):
        return None
    return str(cached["text"]) if cached.get("upto_message_id") in cut_ids else None


def summary_stale(cached: Any, cut_ids: Sequence[str]) -> bool:
    """The usable cached summary leaves REFRESH_AFTER or more cut messages uncovered."""
    covered = cut_ids.index(cached["upto_message_id"]) + 1
    return len(cut_ids) - covered >= REFRESH_AFTER


def history_summary_schedule(*, conversation_id: Any, upto_message_id: str) -> None:
    """Enqueues the summary of the history up to this message after the current transaction
    commits, once per (conversation, message) within a couple of minutes."""
    key = f"history-summary:{conversation_id}:{upto_message_id}"
    try:
        if not cache.add(key, 1, SCHEDULE_DEDUP_S):
            return
    except Exception as exc:  # the cache only saves duplicate tasks
        logger.debug("history_summary.dedup_unavailable", extra={"error": type(exc).__name__})
    transaction.on_commit(
        lambda: enqueue(
            "ai_agents.conversation_history_summarize", str(conversation_id), upto_message_id
        )
    )


def _transcript(messages: Sequence[Message]) -> str:
    names = {"user": _("Cliente"), "assistant": _("Agente")}
    return "\n".join(f"{names.get(m.role, m.role)}: {m.content}" for m in messages)


def summary_extractive(messages: Sequence[Message], previous: str = "") -> str:
    """The start of each message, newest last, within MAX_SUMMARY_CHARS (no model)."""
    parts = [previous] if previous else []
    for message in messages:
        text = " ".join(message.content.split())
        if len(text) > EXTRACT_CHARS:
            text = text[: EXTRACT_CHARS - 1].rstrip() + "…"
        parts.append(f"{_('Cliente') if message.role == 'user' else _('Agente')}: {text}")
    joined = " | ".join(parts)
    return joined if len(joined) <= MAX_SUMMARY_CHARS else "…" + joined[-MAX_SUMMARY_CHARS:]


def _summary_model(
    agent: Agent, conversation: Conversation, messages: Sequence[Message], previous: str
) -> str | None:
    provider = get_provider(None if agent.provider == Agent.Provider.DEFAULT else agent.provider)
    if provider.name == "offline":
        return None
    prompt = _transcript(messages)
    if previous:
        prompt = _("Resumen anterior:") + f" {previous}\n\n" + _("Mensajes nuevos:") + f"\n{prompt}"
    request = LlmRequest(
        messages=[LlmMessage(role="user", content=prompt)],
        system=str(agent.history.get("summary_prompt") or "")
        or _(
            "Resume en español, en un párrafo de menos de 120 palabras, la conversación entre "
            "el cliente y el agente: qué quiere el cliente, datos que ha dado y qué se le ha "
            "respondido. Solo el resumen."
        ),
        temperature=0.2,
        max_output_tokens=400,
        model=agent.model or None,
    )
    context = CallContext(tenant=agent.tenant, agent_id=agent.pk, conversation_id=conversation.pk)
    try:
        result = llm_generate(request, context=context, provider=provider, retry=AGENTS)
    except LlmError as exc:
        logger.warning("history_summary.model_failed", extra={"error": type(exc).__name__})
        return None
    text = " ".join(result.text.split())
    return text[:MAX_SUMMARY_CHARS] or None


def history_summary_generate(*, conversation: Conversation, upto_message_id: str) -> dict[str, Any]:
    """Summarises the conversation's user/assistant messages up to `upto_message_id`
    (for `smart`, after its first message, which stays in the prompt), incrementally from the
    cached summary when it covers an earlier part, and stores it. Returns the stored value
    ({} when the message is gone)."""
    messages = Message.objects.for_tenant(conversation.tenant_id).filter(
        conversation=conversation, role__in=["user", "assistant"]
    )
    upto = messages.filter(pk=upto_message_id).first()
    if upto is None:
        return {}
    cached = conversation.history_summary or {}
    span = messages.filter(created_at__lte=upto.created_at).order_by("created_at", "id")
    agent = conversation.agent
    if agent.history.get("truncation_strategy") == "smart":
        first = span.values_list("id", flat=True).first()
        span = span.exclude(pk=first)
    previous = ""
    count_before = 0
    covered = cached.get("upto_message_id")
    if cached.get("text") and covered:
        start = messages.filter(pk=covered).values_list("created_at", flat=True).first()
        if start is not None and start <= upto.created_at:
            if covered == str(upto.pk):
                return cached
            span = span.filter(created_at__gt=start)
            previous = str(cached["text"])
            count_before = int(cached.get("count") or 0)
    rows = list(span)
    text = _summary_model(agent, conversation, rows, previous) or summary_extractive(rows, previous)
    value: dict[str, Any] = {
        "text": text,
        "upto_message_id": str(upto.pk),
        "count": count_before + len(rows),
    }
    current = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk)
        .values_list("history_summary", flat=True)
        .first()
    ) or {}
    if int(current.get("count") or 0) > value["count"]:
        return dict(current)  # a newer summary was stored meanwhile
    Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk).update(
        history_summary=value
    )
    return value
