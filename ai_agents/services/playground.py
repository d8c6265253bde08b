"""The playground ("Probar agente"): one message through the engine's own phases
(ai_agents/conversations/phases.py) on a conversation and message that are never stored.

What it shows is what the pipeline did: the reply, the passages retrieved with their scores,
the triggers evaluated and the one that fired, intent, sentiment, confidence, the tool calls,
tokens, cost and per-step timings, and a provider error in words. Its usage rows (model,
embeddings, tools) carry the operation `playground`, so a test is never counted as a
customer's conversation. Tools that change data are not run (`model.PLAYGROUND_READ_ONLY`).

As in the engine, no database connection is held while the model (or an embedding) answers:
the usage rows wait for the end of the run (`rows.deferred_writes`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.conversations.no_answer import NO_ANSWER, OUTCOME_KEY
from ai_agents.conversations.phases import (
    bound_input,
    early_triggers,
    model_phase,
    retrieval_phase,
)
from ai_agents.conversations.turn import Turn
from ai_agents.models import Agent, Conversation, Message
from ai_agents.rules.escalation import EscalationDecision
from ai_agents.rules.escalation_config import EscalationTrigger
from ai_agents.rules.escalation_labels import (
    PRIORITY_LABELS,
    REASON_LABELS,
    TRIGGER_LABELS,
    condition_text,
    label,
)
from ai_agents.selectors.knowledge import agent_knowledge_bases
from erp.db import connection_release
from erp.llm.gateway import CallContext
from erp.llm.models import Operation
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

# Bounds checked before any work (the API answers 400 past them).
TEXT_MAX_CHARS = 4000
HISTORY_MAX_ITEMS = 20
HISTORY_ROLES = ("user", "assistant")
PASSAGE_PREVIEW_CHARS = 400
# The channel whose input bound the playground uses (the REST API's).
PLAYGROUND_CHANNEL = "api"


@dataclass(frozen=True)
class HistoryTurn:
    role: str  # user | assistant
    text: str


@dataclass(frozen=True)
class PlaygroundResult:
    reply: str
    escalation: dict[str, str] | None
    passages: list[dict[str, Any]]
    triggers: list[dict[str, Any]]
    intent: str | None
    sentiment: float | None
    confidence: float | None
    no_answer: bool
    tool_calls: list[dict[str, Any]]
    usage: dict[str, Any]
    timings_ms: dict[str, int]
    model: str | None
    error: str | None  # in words, for a person
    notes: list[str] = field(default_factory=list)
    options: list[dict[str, str]] = field(default_factory=list)  # buttons / chips offered

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def agent_playground(
    *, agent: Agent, text: str, history: Sequence[HistoryTurn] = ()
) -> PlaygroundResult:
    """One test message through the pipeline, nothing stored but the usage rows."""
    with tenant_scope(agent.tenant_id):
        turn = _turn(agent, text, history)
        usage = CallContext(
            tenant=agent.tenant, operation=Operation.PLAYGROUND.value, agent_id=agent.pk
        )
        with rows.survive_rollback(), rows.deferred_writes(anywhere=True):
            turn.knowledge_bases = agent_knowledge_bases(agent=agent)
            bound_input(turn)
            turn.timer.mark("receive")
            decided = early_triggers(turn)
            turn.meta["decided_early"] = decided
            connection_release()  # the model (or the query embedding) answers without one
            if decided:
                # The engine stops here (no model); the passages are still shown: what the
                # agent would have known.
                retrieval_phase(turn, usage=usage)
            else:
                model_phase(turn, usage=usage)
        return _result(turn)


def _turn(agent: Agent, text: str, history: Sequence[HistoryTurn]) -> Turn:
    now = timezone.now()
    conversation = Conversation(
        tenant=agent.tenant, agent=agent, channel=PLAYGROUND_CHANNEL, started_at=now
    )
    message = Message(
        tenant=agent.tenant,
        conversation=conversation,
        role="user",
        content=text,
        created_at=now,
    )
    turn = Turn(
        agent=agent,
        conversation=conversation,
        message=message,
        token=uuid.uuid4(),
        playground=True,
    )
    # What `store.turn_next` reads for a stored conversation: newest first.
    turn.history_found = [
        (uuid.uuid4(), h.role, h.text, None, None) for h in reversed(list(history))
    ]
    return turn


def _result(turn: Turn) -> PlaygroundResult:
    meta = turn.meta
    decision = turn.escalation
    return PlaygroundResult(
        reply=turn.reply_text or "",
        options=list(meta.get("options") or []),
        escalation=None
        if decision is None
        else {
            "reason": decision.reason,
            "reason_label": label(REASON_LABELS, decision.reason),
            "priority": decision.priority,
            "priority_label": label(PRIORITY_LABELS, decision.priority),
            "detail": str(decision.detail),
        },
        passages=[
            {
                "title": h.document_title,
                "heading": " › ".join(h.heading_path),
                "content": _preview(h.content),
                "score": round(float(h.score), 4),
                "similarity": None if h.similarity is None else round(float(h.similarity), 4),
            }
            for h in turn.retrieval.hits
        ],
        triggers=_triggers(turn, decision),
        intent=meta.get("intent_detected"),
        sentiment=meta.get("sentiment"),
        confidence=meta.get("confidence"),
        no_answer=meta.get(OUTCOME_KEY) == NO_ANSWER,
        tool_calls=list(meta.get("tool_calls") or []),
        usage={**turn.spent.as_dict(), "calls": turn.spent.calls},
        timings_ms=dict(turn.timer.steps),
        model=meta.get("model_used"),
        error=_error_words(meta),
        notes=_notes(turn),
    )


def _preview(text: str) -> str:
    if len(text) <= PASSAGE_PREVIEW_CHARS:
        return text
    return text[:PASSAGE_PREVIEW_CHARS] + "…"


def _triggers(turn: Turn, decision: EscalationDecision | None) -> list[dict[str, Any]]:
    """Every configured trigger, the one that decided marked `fired` (the first of its type
    and, for intents, naming the intent)."""
    triggers = list(turn.rules.triggers) if turn.rules is not None else []
    fired_at = _fired_index(triggers, decision, turn.meta.get("intent_detected"))
    return [
        {
            "type": t.type,
            "label": label(TRIGGER_LABELS, t.type),
            "priority": t.priority,
            "priority_label": label(PRIORITY_LABELS, t.priority),
            "condition": condition,
            "condition_text": condition_text(condition),
            "fired": i == fired_at,
        }
        for i, t in enumerate(triggers)
        for condition in [t.to_dict().get("condition", {})]
    ]


def _fired_index(
    triggers: list[EscalationTrigger], decision: EscalationDecision | None, intent: Any
) -> int | None:
    if decision is None:
        return None
    for i, trigger in enumerate(triggers):
        if trigger.type != decision.trigger_type:
            continue
        if trigger.type == "intent" and intent not in trigger.intents:
            continue
        return i
    return None


def _error_words(meta: dict[str, Any]) -> str | None:
    kind = meta.get("error")
    if kind is None:
        return None
    words = {
        "Timeout": _("El modelo no respondió a tiempo."),
        "RateLimited": _("El proveedor del modelo rechazó la petición por exceso de uso."),
        "Unavailable": _("El proveedor del modelo no está disponible ahora."),
        "AuthFailed": _("El proveedor rechazó la clave de API: revise la configuración."),
        "BadRequest": _("El proveedor no aceptó la petición (revise el modelo elegido)."),
        "Blocked": _("El proveedor bloqueó la respuesta por sus filtros de contenido."),
        "NoCredits": _("No quedan créditos con el proveedor del modelo."),
        "NotConfigured": _("El proveedor del modelo no está configurado."),
    }
    return words.get(str(kind), _("El modelo falló; se usó el mensaje de respaldo."))


def _notes(turn: Turn) -> list[str]:
    notes = []
    if "rate_limited" in turn.meta:
        notes.append(_("Se agotaron los tokens por minuto de la empresa: no se llamó al modelo."))
    if "input_truncated" in turn.meta:
        notes.append(_("El mensaje se recortó al límite del canal."))
    if turn.meta.get("decided_early"):
        notes.append(_("Un disparador decidió antes del modelo: no se llamó al modelo."))
    return notes
