"""An escalation told in words: what is stored on the conversation and what people read.

`escalation_record(decision, history, text, at)` is the JSON the engine stores in
`Conversation.escalation_info` with the status (codes, the `detail` as its parts: the matched
phrase, the score... see ai_agents/rules/detail.py, or the model's stated reason; the
extractive summary's lines; the notifying task may add the model's `summary`);
`escalation_view(...)` is what the API, the inbox and the staff notifications show: the same
facts plus `*_label`s and the detail worded, all in the reader's language. People never see a
raw code: an unknown one reads as a generic label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.rules.detail import detail_stored, detail_text
from ai_agents.rules.escalation import EscalationDecision

REASON_LABELS = {
    "user_request": gettext_lazy("El cliente pidió una persona"),
    "keyword_match": gettext_lazy("El mensaje contiene una palabra clave configurada"),
    "model_request": gettext_lazy("El asistente de IA decidió pasar a una persona"),
    "negative_sentiment": gettext_lazy("El cliente parece molesto"),
    "intent_match": gettext_lazy("El tema requiere a una persona"),
    "low_confidence": gettext_lazy("El asistente no estaba seguro de la respuesta"),
    "conversation_loop": gettext_lazy("La conversación se repite sin avanzar"),
    "llm_failure": gettext_lazy("El modelo de IA falló varias veces"),
    "timeout": gettext_lazy("El modelo de IA no respondió a tiempo"),
    "no_credits": gettext_lazy("Se agotaron los créditos de IA"),
    "budget_exhausted": gettext_lazy("Se agotó el presupuesto mensual de IA"),
    "processing_failed": gettext_lazy("No se pudo procesar el mensaje tras varios intentos"),
    "agent_inactive": gettext_lazy("El agente está desactivado"),
    "no_agent": gettext_lazy("No hay ningún agente que responda en este canal"),
    "staff_takeover": gettext_lazy("Una persona del equipo tomó la conversación"),
}
PRIORITY_LABELS = {
    "low": gettext_lazy("Baja"),
    "medium": gettext_lazy("Media"),
    "high": gettext_lazy("Alta"),
    "urgent": gettext_lazy("Urgente"),
}
TRIGGER_LABELS = {
    "keyword": gettext_lazy("Palabras clave"),
    "user_request": gettext_lazy("Petición de una persona"),
    "sentiment": gettext_lazy("Sentimiento negativo"),
    "intent": gettext_lazy("Intención detectada"),
    "confidence": gettext_lazy("Confianza baja"),
    "loop_detection": gettext_lazy("Detección de repeticiones"),
    "model": gettext_lazy("Decisión del asistente de IA"),
    "llm_failure": gettext_lazy("Fallo del modelo"),
    "timeout": gettext_lazy("Tiempo de respuesta agotado"),
    "no_credits": gettext_lazy("Créditos de IA"),
    "budget_exhausted": gettext_lazy("Presupuesto mensual"),
    "processing_failed": gettext_lazy("Intentos agotados"),
    "staff": gettext_lazy("Equipo"),
}
LAYER_LABELS = {
    "rules": gettext_lazy("Reglas de frases"),
    "embedding": gettext_lazy("Parecido con ejemplos conocidos"),
    "learned": gettext_lazy("Modelo aprendido de ejemplos etiquetados"),
    "model": gettext_lazy("Asistente de IA"),
    "trigger": gettext_lazy("Disparador configurado"),
    "loop": gettext_lazy("Detección de repeticiones"),
    "failure": gettext_lazy("Fallo del servicio de IA"),
    "staff": gettext_lazy("Equipo"),
}
# The layer of a decision that does not say (the trigger type tells).
_LAYER_OF_TRIGGER = {
    "keyword": "trigger",
    "user_request": "rules",
    "sentiment": "model",
    "intent": "trigger",
    "confidence": "model",
    "loop_detection": "loop",
    "model": "model",
    "llm_failure": "failure",
    "timeout": "failure",
    "no_credits": "failure",
    "budget_exhausted": "failure",
}
SUMMARY_MAX_CHARS = 600
SUMMARY_LINE_CHARS = 160
SUMMARY_LINES = 4


def label(table: Mapping[str, Any], code: str) -> str:
    """The code's label in the active language; "" for no code, a generic one if unknown."""
    if not code:
        return ""
    found = table.get(code)
    return str(found) if found is not None else _("Otro motivo")


# A trigger's condition keys (ai_agents/rules/escalation.py) in words, in the order shown.
CONDITION_LABELS = {
    "keywords": gettext_lazy("palabras"),
    "phrases": gettext_lazy("frases"),
    "intents": gettext_lazy("temas"),
    "exclude": gettext_lazy("excepto"),
    "threshold": gettext_lazy("umbral"),
    "max_similar": gettext_lazy("repeticiones"),
    "window": gettext_lazy("últimos mensajes"),
    "similarity": gettext_lazy("parecido mínimo"),
    "min_words": gettext_lazy("palabras mínimas"),
}


def condition_text(condition: Mapping[str, Any]) -> str:
    """A trigger's condition as people read it ("palabras: reembolso, devolución"); empty
    values and keys without a label are left out (never a raw key)."""
    parts = []
    for key, name in CONDITION_LABELS.items():
        value = condition.get(key)
        if value in (None, "", [], {}):
            continue
        shown = ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else value
        parts.append(f"{name}: {shown}")
    return "; ".join(parts)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= SUMMARY_LINE_CHARS:
        return text
    return text[: SUMMARY_LINE_CHARS - 1].rstrip() + "…"


def summary_lines(history: Sequence[tuple[str, str]], text: str) -> list[list[str]]:
    """The gist without a model: the customer's first message (the topic), the bot's last
    answer and the customer's last messages, in order, each clipped, as [role, text] pairs;
    `history` is the earlier (role, content) pairs, oldest first, `text` the message that
    escalated."""
    turns = [(r, c) for r, c in history if r in ("user", "assistant") and c.strip()]
    turns.append(("user", text))
    user_at = [i for i, (role, _c) in enumerate(turns) if role == "user"]
    bot_at = [i for i, (role, _c) in enumerate(turns) if role == "assistant"]
    keep = {user_at[0], *user_at[-(SUMMARY_LINES - 2) :], *bot_at[-1:]}
    lines: list[list[str]] = []
    for index in sorted(keep):
        role, content = turns[index]
        clipped = _clip(content)
        if clipped and [role, clipped] not in lines:
            lines.append([role, clipped])
    return lines


def summary_render(lines: Sequence[Sequence[str]]) -> str:
    """The extractive summary in the active language ("Cliente: …" / "Customer: …")."""
    names = {"user": _("Cliente"), "assistant": _("Asistente")}
    text = "\n".join(f"{names.get(role, role)}: {content}" for role, content in lines)
    return text if len(text) <= SUMMARY_MAX_CHARS else text[: SUMMARY_MAX_CHARS - 1] + "…"


def summary_extractive(history: Sequence[tuple[str, str]], text: str) -> str:
    return summary_render(summary_lines(history, text))


def escalation_record(
    decision: EscalationDecision,
    *,
    history: Sequence[tuple[str, str]],
    text: str,
    at: datetime,
) -> dict[str, Any]:
    """What `Conversation.escalation_info` keeps (codes and words, no labels: those follow the
    reader's language)."""
    layer = getattr(decision, "layer", "") or _LAYER_OF_TRIGGER.get(decision.trigger_type, "")
    return {
        "reason": decision.reason,
        "priority": decision.priority,
        "trigger": decision.trigger_type,
        "layer": layer,
        "detail": detail_stored(decision.detail),  # its parts, worded when read
        "summary": "",  # the model's, once the notifying task made one
        "summary_lines": summary_lines(history, text),  # the extractive one, no labels
        "summary_source": "extractive",
        "at": at.isoformat(),
    }


def escalation_view(
    info: Mapping[str, Any] | None, *, reason: str, priority: str, at: datetime | None
) -> dict[str, Any] | None:
    """The escalation as people and integrations read it (None: never escalated). `info` is
    used when it belongs to the current escalation (same reason); otherwise (a staff takeover,
    an escalation stored before the info existed) the conversation's columns speak alone."""
    if not reason and not info:
        return None
    facts = dict(info or {})
    if facts.get("reason") != reason and reason:
        facts = {"reason": reason, "priority": priority}
        if reason == "staff_takeover":
            facts.update(trigger="staff", layer="staff")
    code = str(facts.get("reason") or "")
    prio = str(facts.get("priority") or priority or "")
    trigger, layer = str(facts.get("trigger") or ""), str(facts.get("layer") or "")
    return {
        "reason": code,
        "reason_label": label(REASON_LABELS, code),
        "priority": prio,
        "priority_label": label(PRIORITY_LABELS, prio),
        "trigger": trigger,
        "trigger_label": label(TRIGGER_LABELS, trigger),
        "layer": layer,
        "layer_label": label(LAYER_LABELS, layer),
        "detail": detail_text(facts.get("detail")),
        "summary": str(facts.get("summary") or "") or _summary_of(facts),
        "at": facts.get("at") or (at.isoformat() if at else None),
    }


def _summary_of(facts: Mapping[str, Any]) -> str:
    """The stored extractive lines rendered; "" when there are none (or they are malformed)."""
    lines = facts.get("summary_lines")
    if not isinstance(lines, list):
        return ""
    pairs = [[str(v) for v in line] for line in lines if isinstance(line, list) and len(line) == 2]
    return summary_render(pairs)


def conversation_escalation(conversation: Any) -> dict[str, Any] | None:
    """`escalation_view` of a Conversation row."""
    return escalation_view(
        conversation.escalation_info,
        reason=conversation.escalation_reason,
        priority=conversation.escalation_priority,
        at=conversation.escalated_at,
    )
