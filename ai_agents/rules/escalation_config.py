"""The escalation triggers' configuration (an agent's `escalation_triggers`): the trigger
types, priorities and `parse_escalation_triggers`, which validates the JSON (every problem
listed in one ValidationError). What each type checks: `ai_agents.rules.escalation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from django.utils.translation import gettext as _

from ai_agents.rules.text import words
from ai_agents.rules.validation import Errors, integer, number, string_list

TriggerType = Literal[
    "keyword", "sentiment", "intent", "confidence", "loop_detection", "user_request"
]
TRIGGER_TYPES: tuple[str, ...] = (
    "keyword",
    "sentiment",
    "intent",
    "confidence",
    "loop_detection",
    "user_request",
)
PRIORITIES: tuple[str, ...] = ("low", "medium", "high", "urgent")
FailureKind = Literal["llm_failure", "timeout", "no_credits", "budget_exhausted"]
MAX_TRIGGERS = 50
MAX_MESSAGE_CHARS = 2000

USER_REQUEST_PHRASES: tuple[str, ...] = (
    "quiero hablar con una persona",
    "quiero hablar con un humano",
    "hablar con una persona",
    "hablar con un humano",
    "hablar con un agente",
    "hablar con alguien",
    "hablar con un asesor",
    "hablar con un ejecutivo",
    "un agente por favor",
    "una persona por favor",
    "un humano por favor",
    "pasame con un agente",
    "pasame con una persona",
    "pasame con un humano",
    "comunicame con un agente",
    "comunicame con una persona",
    "agente humano",
    "persona real",
    "atencion humana",
    "talk to a human",
    "speak to a human",
    "talk to a person",
    "speak to a person",
    "talk to an agent",
    "speak to an agent",
    "speak with a human",
    "talk with a human",
    "human agent",
    "real person",
    "a human please",
    "an agent please",
)


@dataclass(frozen=True)
class EscalationTrigger:
    type: TriggerType
    priority: str = "medium"
    message: str | None = None
    keywords: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()
    threshold: float | None = None
    max_similar: int = 3
    window: int = 10
    similarity: float = 0.8
    min_words: int = 2

    def to_dict(self) -> dict[str, Any]:
        conditions: dict[str, dict[str, Any]] = {
            "keyword": {"keywords": list(self.keywords), "exclude": list(self.exclude)},
            "sentiment": {"threshold": self.threshold},
            "intent": {"intents": list(self.intents)},
            "confidence": {"threshold": self.threshold},
            "loop_detection": {
                "max_similar": self.max_similar,
                "window": self.window,
                "similarity": self.similarity,
                "min_words": self.min_words,
            },
            "user_request": {"phrases": list(self.keywords), "exclude": list(self.exclude)},
        }
        condition = conditions[self.type]
        out: dict[str, Any] = {"type": self.type, "condition": condition, "priority": self.priority}
        if self.message:
            out["message"] = self.message
        return out


def _priority(entry: Mapping[str, Any], where: str, errors: Errors) -> str:
    """The trigger's priority; an invalid one is reported and read as medium."""
    priority = entry.get("priority", "medium")
    if priority not in PRIORITIES:
        errors.add(
            _("%(where)s: prioridad «%(p)s» no válida (use low, medium, high o urgent).")
            % {"where": where, "p": priority}
        )
        return "medium"
    return str(priority)


def _message(entry: Mapping[str, Any], where: str, errors: Errors) -> str | None:
    """The trigger's own message; an invalid one is reported and dropped."""
    message = entry.get("message")
    if message is not None and (not isinstance(message, str) or len(message) > MAX_MESSAGE_CHARS):
        errors.add(
            _("%(where)s: «message» debe ser texto de hasta %(n)s caracteres.")
            % {"where": where, "n": MAX_MESSAGE_CHARS}
        )
        return None
    return message or None


def _keyword_fields(condition: Mapping[str, Any], where: str, errors: Errors) -> dict[str, Any]:
    keywords = string_list(condition.get("keywords"), where + " · keywords", errors, required=True)
    for keyword in keywords:
        if not words(keyword):
            errors.add(
                _("%(where)s: la palabra clave «%(kw)s» no tiene letras ni dígitos.")
                % {"where": where, "kw": keyword}
            )
    exclude = string_list(condition.get("exclude"), where + " · exclude", errors)
    return {"keywords": tuple(keywords), "exclude": tuple(exclude)}


def _user_request_fields(
    condition: Mapping[str, Any], where: str, errors: Errors
) -> dict[str, Any]:
    phrases = string_list(condition.get("phrases"), where + " · phrases", errors)
    exclude = string_list(condition.get("exclude"), where + " · exclude", errors)
    return {"keywords": tuple(phrases), "exclude": tuple(exclude)}


def _intent_fields(condition: Mapping[str, Any], where: str, errors: Errors) -> dict[str, Any]:
    intents = string_list(condition.get("intents"), where + " · intents", errors, required=True)
    return {"intents": tuple(intents)}


def _sentiment_fields(condition: Mapping[str, Any], where: str, errors: Errors) -> dict[str, Any]:
    threshold = number(
        condition.get("threshold"), where + " · threshold", errors, low=-1, high=1, default=-0.5
    )
    return {"threshold": threshold}


def _confidence_fields(condition: Mapping[str, Any], where: str, errors: Errors) -> dict[str, Any]:
    threshold = number(
        condition.get("threshold"), where + " · threshold", errors, low=0, high=1, default=0.5
    )
    return {"threshold": threshold}


def _loop_fields(condition: Mapping[str, Any], where: str, errors: Errors) -> dict[str, Any]:
    similarity = number(
        condition.get("similarity"), where + " · similarity", errors, low=0.5, high=1, default=0.8
    )
    return {
        "max_similar": integer(
            condition.get("max_similar"),
            where + " · max_similar",
            errors,
            low=2,
            high=20,
            default=3,
        ),
        "window": integer(
            condition.get("window"), where + " · window", errors, low=1, high=50, default=10
        ),
        "similarity": similarity if similarity is not None else 0.8,
        "min_words": integer(
            condition.get("min_words"), where + " · min_words", errors, low=1, high=10, default=2
        ),
    }


# One parser per trigger type: the condition's fields of `EscalationTrigger`.
_CONDITION_FIELDS: dict[str, Callable[[Mapping[str, Any], str, Errors], dict[str, Any]]] = {
    "keyword": _keyword_fields,
    "user_request": _user_request_fields,
    "intent": _intent_fields,
    "sentiment": _sentiment_fields,
    "confidence": _confidence_fields,
    "loop_detection": _loop_fields,
}


def _parse_one(entry: Any, where: str, errors: Errors) -> EscalationTrigger | None:
    if not isinstance(entry, Mapping):
        errors.add(_("%(where)s: debe ser un objeto.") % {"where": where})
        return None
    kind = entry.get("type")
    if kind not in TRIGGER_TYPES:
        errors.add(
            _("%(where)s: tipo «%(type)s» no válido (use %(valid)s).")
            % {"where": where, "type": kind, "valid": ", ".join(TRIGGER_TYPES)}
        )
        return None
    where = f"{where} ({kind})"
    priority = _priority(entry, where, errors)
    message = _message(entry, where, errors)
    condition = entry.get("condition")
    if condition is None:
        condition = {k: v for k, v in entry.items() if k not in ("type", "priority", "message")}
    if not isinstance(condition, Mapping):
        errors.add(_("%(where)s: «condition» debe ser un objeto.") % {"where": where})
        return None
    fields = _CONDITION_FIELDS[kind](condition, where, errors)
    return EscalationTrigger(type=kind, priority=priority, message=message, **fields)


def parse_escalation_triggers(raw: Any) -> list[EscalationTrigger]:
    """Validate the `escalation_triggers` JSON; raises ValidationError listing every problem."""
    errors = Errors()
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.add(_("Disparadores de escalación: debe ser una lista."))
        errors.raise_if_any()
    if len(raw) > MAX_TRIGGERS:
        errors.add(_("Disparadores de escalación: máximo %(n)s.") % {"n": MAX_TRIGGERS})
    triggers = [
        _parse_one(entry, _("Disparador %(n)s") % {"n": index}, errors)
        for index, entry in enumerate(raw[:MAX_TRIGGERS], start=1)
    ]
    errors.raise_if_any()
    return [t for t in triggers if t is not None]
