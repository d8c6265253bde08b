"""A turn's context: the agent's rules, the history, the system prompt with its context block,
and the model request built from them."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.utils import timezone
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _

from ai_agents.conversations.actions import BASE_ACTIONS, ActionSet
from ai_agents.conversations.history_sql import history_rows
from ai_agents.conversations.no_answer import NO_ANSWER_INSTRUCTION, confident_hits
from ai_agents.models import Agent, Contact, Conversation
from ai_agents.rules import escalation, history, intent
from ai_agents.rules.history import HistoryItem
from ai_agents.rules.options import OPTIONS_INSTRUCTION
from ai_agents.rules.prompt import format_spanish_datetime, render_system_prompt
from ai_agents.selectors.knowledge import SearchHit
from ai_agents.services.history_summary import (
    history_summary_schedule,
    summary_stale,
    summary_usable,
)
from erp.llm.types import LlmRequest, Passage
from erp.llm.types import Message as LlmMessage


@dataclass(frozen=True)
class Rules:
    """An agent's escalation triggers (plus an intent trigger, medium priority, for every
    configured intent whose `action` is "trigger_escalation" and that no intent trigger names
    yet) and intents: parsed once per configuration (`rules_for`), used all along a message."""

    key: str  # the configuration's JSON: the cache key of what derives from it
    triggers: tuple[escalation.EscalationTrigger, ...]
    intents: intent.IntentConfig


def rules_for(agent: Any) -> Rules:
    """One JSON serialisation per message; the parsing is cached per configuration."""
    return _rules(_key([agent.escalation_triggers or [], agent.intent_detection or {}]))


@functools.lru_cache(maxsize=512)
def _rules(raw: str) -> Rules:
    triggers, config = json.loads(raw)
    intents = intent.parse_intent_config(config)
    parsed = escalation.parse_escalation_triggers(triggers)
    covered = {name for t in parsed if t.type == "intent" for name in t.intents}
    actions = [
        escalation.EscalationTrigger(type="intent", priority="medium", intents=(d.intent,))
        for d in intents.intents
        if d.action == "trigger_escalation" and d.intent not in covered
    ]
    return Rules(key=raw, triggers=(*parsed, *actions), intents=intents)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@functools.lru_cache(maxsize=512)
def _intent_prompt(key: str, language: str | None) -> str:
    """(`language`: the active one, part of the cache key: the heading is translated.)"""
    rules = _rules(key)
    if rules.intents.mode == "keyword" or not rules.intents.intents:
        return ""
    lines = [_("## Intenciones (campo intent; «otra» si ninguna encaja):")]
    for item in rules.intents.intents:
        line = f"- {item.intent}"
        if item.description:
            line += f": {item.description}"
        if item.examples:
            line += " (" + _("p. ej.") + " " + "; ".join(f"«{e}»" for e in item.examples[:3]) + ")"
        lines.append(line)
    return "\n".join(lines)


def intent_prompt(rules: Rules) -> str:
    """The configured intents for the model (llm and hybrid modes), or ""."""
    return _intent_prompt(rules.key, get_language())


def keyword_intent(text: str, rules: Rules) -> intent.IntentMatch | None:
    """The intent matched by keywords (modes keyword and hybrid), before any model call."""
    if rules.intents.mode == "llm":
        return None
    return intent.detect_keyword_intent(text, rules.intents)


def final_intent(
    text: str,
    rules: Rules,
    *,
    keyword: intent.IntentMatch | None,
    llm_intent: str | None,
    llm_confidence: float | None,
) -> str | None:
    """The mode's rule (`intent.resolve_intent`), with `keyword`, the match `keyword_intent`
    found before the model call (the text is not matched twice)."""
    match = intent.resolve_intent(
        text,
        rules.intents,
        llm_intent=llm_intent,
        llm_confidence=llm_confidence,
        keyword=keyword,
    )
    return match.intent if match else None


def history_load(
    *,
    conversation: Conversation,
    config: Mapping[str, Any],
    before: Any = None,
    found: Sequence[tuple[Any, str, str, Any, str | None]] | None = None,
) -> tuple[list[HistoryItem], list[str]]:
    """Earlier user/assistant messages (before `before`, when the message being answered is
    already stored) truncated per the agent's history config, and the earlier user texts
    (oldest first, for loop detection); one query, none when `store.turn_next` read them
    (`found`). With `summarize` and `smart`, once the conversation has `summarize_after`
    messages, the conversation's cached summary of the cut middle is the summary item while
    it still covers cut messages; a summary is enqueued for
    after the reply when there is none, and a refresh when enough newer messages are cut
    (ai_agents/services/history_summary.py)."""
    if found is None:
        found = history_rows(conversation=conversation, config=config, before=before)
    turns = [
        HistoryItem(role=r, content=c, message_id=str(i), at=at, outcome=o)
        for i, r, c, at, o in reversed(found)
    ]
    recent = [t.content for t in turns if t.role == "user"]
    options: dict[str, Any] = {
        "strategy": str(config["truncation_strategy"]),
        "max_messages": int(config["max_messages"]),
        "token_budget": int(config["max_tokens"]),
    }
    result = history.truncate_history(turns, **options, summary=None)
    if not result.needs_summary_of:
        return list(result.items), recent
    if conversation.message_count < int(config["summarize_after"]):
        return list(result.items), recent  # too short to summarize yet: the middle is left out
    cut_ids = [str(t.message_id) for t in result.needs_summary_of]
    summary = summary_usable(conversation.history_summary, cut_ids)
    if summary is not None:
        result = history.truncate_history(turns, **options, summary=summary)
    if summary is None or summary_stale(conversation.history_summary, cut_ids):
        history_summary_schedule(conversation_id=conversation.pk, upto_message_id=cut_ids[-1])
    return list(result.items), recent


def system_prompt(
    *,
    agent: Agent,
    conversation: Conversation,
    contact: Contact | None,
    previous_intents: Sequence[str] = (),
) -> str:
    """The agent's prompt (placeholders filled), then the context block: what the model knows
    of the moment, the business, the customer and the conversation (the spec's `session`: its
    id, start and the intents detected so far) whether or not the prompt names it."""
    tenant = agent.tenant
    now = timezone.localtime(timezone.now(), _zone(tenant.timezone))
    variables = conversation.session_variables or {}
    prompt = render_system_prompt(
        agent.system_prompt,
        company_name=tenant.name,
        agent_name=agent.name,
        customer_name=(contact.name if contact else "") or "",
        now=now,
        session_variables=variables,
    )
    return (
        prompt
        + "\n\n"
        + context_block(
            now=now,
            company=tenant.name,
            agent_name=agent.name,
            contact=contact,
            variables=variables,
            session=Session(
                id=str(conversation.pk),
                started_at=timezone.localtime(conversation.started_at, now.tzinfo),
                previous_intents=tuple(previous_intents),
            ),
        )
    )


@dataclass(frozen=True)
class Session:
    """The conversation as the spec's context names it (`session.*`)."""

    id: str
    started_at: datetime  # in the tenant's time zone
    previous_intents: tuple[str, ...] = ()  # detected on earlier replies, oldest first


# A customer's attributes and session variables go into every prompt: kept short.
CONTEXT_VALUE_MAX_CHARS = 600


def context_block(
    *,
    now: datetime,
    company: str,
    agent_name: str,
    contact: Contact | None,
    variables: Mapping[str, Any],
    session: Session | None = None,
) -> str:
    labels = _context_labels(get_language())
    lines = [
        labels["title"],
        labels["now"] % {"now": format_spanish_datetime(now)},
        labels["company"] % {"company": company, "agent": agent_name},
    ]
    if contact is not None:
        known = [
            (labels[field], value)
            for field, value in (
                ("name", contact.name),
                ("email", contact.email),
                ("phone", contact.phone),
            )
            if value
        ]
        if known or contact.custom_attributes:
            described = ", ".join(f"{label}: {value}" for label, value in known)
            if contact.custom_attributes:
                attributes = _compact(contact.custom_attributes)
                described += ("; " if described else "") + labels["data"] % {"a": attributes}
            lines.append(labels["customer"] % {"c": described})
    if variables:
        lines.append(labels["variables"] % {"v": _compact(variables)})
    if session is not None:
        started = format_spanish_datetime(session.started_at)
        lines.append(labels["session"] % {"id": session.id, "started": started})
        if session.previous_intents:
            intents = ", ".join(session.previous_intents)
            lines.append(labels["intents"] % {"intents": intents})
    return "\n".join(lines)


@functools.lru_cache(maxsize=16)
def _context_labels(language: str | None) -> dict[str, str]:
    """The context block's labels in `language` (the active one: the cache key)."""
    return {
        "title": _("## Contexto:"),
        "now": _("- Fecha y hora: %(now)s"),
        "company": _("- Empresa: %(company)s; agente: %(agent)s"),
        "name": _("nombre"),
        "email": _("correo"),
        "phone": _("teléfono"),
        "data": _("datos: %(a)s"),
        "customer": _("- Cliente: %(c)s"),
        "variables": _("- Variables de la conversación: %(v)s"),
        "session": _("- Conversación: %(id)s, iniciada el %(started)s"),
        "intents": _("- Intenciones detectadas antes en esta conversación (en orden): %(intents)s"),
    }


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    return text if len(text) <= CONTEXT_VALUE_MAX_CHARS else text[:CONTEXT_VALUE_MAX_CHARS] + "…"


def _zone(name: str) -> Any:
    return ZoneInfo(name)


TURN_ROLES = ("user", "assistant")
# Each earlier message reaches the model after its time (the spec's history `timestamp`).
HISTORY_TIME_FORMAT = "[%Y-%m-%d %H:%M]"
HISTORY_TIME_NOTE = gettext_lazy(
    "Los mensajes anteriores de la conversación empiezan con su fecha y hora local "
    "[AAAA-MM-DD HH:MM]; no la escribas en tu respuesta."
)


def _turn_messages(agent: Agent, history: Sequence[HistoryItem]) -> list[LlmMessage]:
    """The user and assistant turns of the history, each after its time."""
    zone = _zone(agent.tenant.timezone)
    return [
        LlmMessage(role="assistant" if t.role == "assistant" else "user", content=_timed(t, zone))
        for t in history
        if t.role in TURN_ROLES
    ]


def _timed(item: HistoryItem, zone: Any) -> str:
    """The history turn's text after its time in the tenant's zone (as it is without one)."""
    if item.at is None:
        return item.content
    return f"{timezone.localtime(item.at, zone).strftime(HISTORY_TIME_FORMAT)} {item.content}"


def build_request(
    *,
    agent: Agent,
    system: str,
    history: list[HistoryItem],
    text: str,
    hits: list[SearchHit],
    processing: Mapping[str, Any],
    actions: ActionSet = BASE_ACTIONS,
    exchange: Sequence[LlmMessage] = (),
    rules: Rules | None = None,
) -> LlmRequest:
    """`exchange`: this message's tool rounds so far (the model's action, the tool's result)."""
    parts = [system]
    # The summary of the history cut out of the prompt (a system item) goes with the system
    # text: providers take system text apart from the turns.
    parts.extend(t.content for t in history if t.role == "system")
    if hits:
        formatted = "\n\n".join(
            f"[{i}] {h.document_title}\n{h.content}" for i, h in enumerate(hits, start=1)
        )
        parts.append(_("## Información Relevante:") + "\n" + formatted)
    intents = intent_prompt(rules or rules_for(agent))
    if intents:
        parts.append(intents)
    tools = [a for a in actions.actions if a.name in actions.tool_names]
    if tools:
        parts.append(
            _("## Herramientas Disponibles:")
            + "\n"
            + "\n".join(f"- {a.name}: {a.description}" for a in tools)
        )
    parts.append(
        _(
            "Responde con un objeto JSON: action (respond, escalate o una herramienta), answer "
            "(tu respuesta), intent, sentiment (-1 a 1) y confidence (0 a 1)."
        )
    )
    parts.append(str(NO_ANSWER_INSTRUCTION))
    parts.append(str(OPTIONS_INSTRUCTION))
    if any(t.at is not None for t in history if t.role in TURN_ROLES):
        parts.append(str(HISTORY_TIME_NOTE))
    messages = _turn_messages(agent, history)
    messages.append(LlmMessage(role="user", content=text))
    messages.extend(exchange)
    return LlmRequest(
        messages=messages,
        system="\n\n".join(parts),
        json_schema=actions.schema,
        temperature=agent.temperature,
        max_output_tokens=agent.max_output_tokens,
        timeout_s=int(processing["llm_timeout_ms"]) / 1000,
        model=agent.model or None,
        # Only what retrieval is confident about: the offline provider quotes it as is.
        passages=[
            Passage(text=h.content, source=h.document_title) for h in confident_hits(hits, text)
        ],
    )
