"""Escalation triggers (the agent's `escalation_triggers`) and the decision to hand over to a human.

Config: a list of triggers, each `{"type", "condition": {...}, "priority", "message"?}`
(parameters may also sit at the top level instead of inside `condition`). `priority` is one of
low|medium|high|urgent (default medium); `message` (optional) is the text to send instead of
the agent's escalation message. Conditions per type:

- keyword:        {"keywords": [..] (required), "exclude": [..]} -> reason `keyword_match`
- sentiment:      {"threshold": -1..1 (default -0.5)}; with a threshold <= 0, fires when the
                  LLM's sentiment (-1..1) is <= threshold; a positive threshold is read as
                  a negativity (0..1, `sentiment.negative > threshold`): fires when the
                  sentiment is below -threshold -> `negative_sentiment`
- intent:         {"intents": [..] (required)}; fires when the detected intent is one of them
                  -> `intent_match`
- confidence:     {"threshold": 0..1 (default 0.5)}; fires when the LLM's confidence is
                  < threshold -> `low_confidence`
- loop_detection: {"max_similar": 2..20 (default 3), "window": 1..50 (default 10),
                  "similarity": 0.5..1 (default 0.8), "min_words": 1..10 (default 2)}; fires
                  when the current user message (of at least `min_words` words, so repeated
                  short answers like "sí" are not a loop) and
                  earlier ones among the last `window` user messages are the same message
                  (normalised equal, or token Jaccard >= similarity) `max_similar` times in all,
                  the current one included -> `conversation_loop`
- user_request:   {"phrases": [..], "exclude": [..]} (both optional, ADDED to the built-in
                  Spanish/English phrases and `HUMAN_AGENT_EXCLUDES`) -> `user_request`

`evaluate_escalation` checks every trigger and returns the matching one with the highest
priority (ties: config order), or None. Independently of the config, `model_requested=True`
(the model chose the `escalate` action) escalates with reason `model_request`, the priority of a
configured user_request trigger or medium; configured triggers of higher priority win over it.
Missing signals (sentiment/intent/confidence None) never fire their trigger.
`failure_decision(kind)` gives the decision for llm_failure / timeout / no_credits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.utils.translation import gettext as _

from ai_agents.rules.text import HUMAN_AGENT_EXCLUDES, first_matching_phrase, normalize, words
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
FailureKind = Literal["llm_failure", "timeout", "no_credits"]
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

REASONS: dict[str, str] = {
    "keyword": "keyword_match",
    "sentiment": "negative_sentiment",
    "intent": "intent_match",
    "confidence": "low_confidence",
    "loop_detection": "conversation_loop",
    "user_request": "user_request",
}
FAILURE_PRIORITIES: dict[str, str] = {
    "llm_failure": "high",
    "timeout": "high",
    "no_credits": "urgent",
}


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


@dataclass(frozen=True)
class EscalationDecision:
    reason: str
    priority: str
    trigger_type: str
    detail: str = ""
    message: str | None = None  # the trigger's own message, if configured
    layer: str = ""  # which layer decided: rules | embedding | model | trigger | loop


def default_escalation_triggers() -> list[EscalationTrigger]:
    """What an agent without configured triggers gets: the built-in user request, high."""
    return [EscalationTrigger(type="user_request", priority="high")]


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


def similar_messages(a: str, b: str, *, similarity: float = 0.8) -> bool:
    """Same normalised text, or token-set Jaccard >= similarity."""
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    sa, sb = set(na.split()), set(nb.split())
    return len(sa & sb) / len(sa | sb) >= similarity


def _check(
    trigger: EscalationTrigger,
    *,
    text: str,
    sentiment: float | None,
    intent: str | None,
    confidence: float | None,
    recent_user_texts: Sequence[str],
) -> str | None:
    """The detail of a firing trigger, or None."""
    if trigger.type == "keyword":
        hit = first_matching_phrase(text, trigger.keywords, excludes=trigger.exclude)
        return _("palabra clave «%(kw)s»") % {"kw": hit} if hit else None
    if trigger.type == "user_request":
        hit = first_matching_phrase(
            text,
            (*trigger.keywords, *USER_REQUEST_PHRASES),
            excludes=(*trigger.exclude, *HUMAN_AGENT_EXCLUDES),
        )
        return _("el usuario pidió una persona («%(p)s»)") % {"p": hit} if hit else None
    if trigger.type == "sentiment":
        if sentiment is None or trigger.threshold is None:
            return None
        if trigger.threshold > 0:  # the negativity form: above the threshold
            if -sentiment <= trigger.threshold:
                return None
            return _("sentimiento %(s).2f < %(t).2f") % {"s": sentiment, "t": -trigger.threshold}
        if sentiment > trigger.threshold:
            return None
        return _("sentimiento %(s).2f <= %(t).2f") % {"s": sentiment, "t": trigger.threshold}
    if trigger.type == "confidence":
        if confidence is None or trigger.threshold is None or confidence >= trigger.threshold:
            return None
        return _("confianza %(c).2f < %(t).2f") % {"c": confidence, "t": trigger.threshold}
    if trigger.type == "intent":
        if not intent:
            return None
        wanted = {normalize(i) for i in trigger.intents}
        return _("intención «%(i)s»") % {"i": intent} if normalize(intent) in wanted else None
    # loop_detection
    if len(words(text)) < max(1, trigger.min_words):
        return None
    window = list(recent_user_texts)[-trigger.window :]
    count = 1 + sum(similar_messages(text, t, similarity=trigger.similarity) for t in window)
    if count < trigger.max_similar:
        return None
    return _("el mismo mensaje %(n)s veces") % {"n": count}


def evaluate_escalation(
    triggers: Sequence[EscalationTrigger],
    *,
    text: str,
    sentiment: float | None,
    intent: str | None,
    confidence: float | None,
    recent_user_texts: list[str],
    model_requested: bool,
    model_reason: str | None,
) -> EscalationDecision | None:
    """The highest-priority firing trigger (ties: config order), or None.

    `recent_user_texts`: the earlier user messages of the conversation, oldest first, WITHOUT
    the current one (`text`).
    """
    best: EscalationDecision | None = None
    for trigger in triggers:
        detail = _check(
            trigger,
            text=text,
            sentiment=sentiment,
            intent=intent,
            confidence=confidence,
            recent_user_texts=recent_user_texts,
        )
        if detail is None:
            continue
        decision = EscalationDecision(
            reason=REASONS[trigger.type],
            priority=trigger.priority,
            trigger_type=trigger.type,
            detail=detail,
            message=trigger.message,
        )
        if best is None or PRIORITIES.index(decision.priority) > PRIORITIES.index(best.priority):
            best = decision
    if model_requested:
        user_request = next((t for t in triggers if t.type == "user_request"), None)
        decision = EscalationDecision(
            reason="model_request",
            priority=user_request.priority if user_request else "medium",
            trigger_type="model",
            detail=(model_reason or "").strip()[:500],
            message=user_request.message if user_request else None,
        )
        if best is None or PRIORITIES.index(decision.priority) > PRIORITIES.index(best.priority):
            best = decision
    return best


def failure_decision(kind: FailureKind) -> EscalationDecision:
    """The decision after an LLM failure, a timeout, or a tenant without credits."""
    if kind not in FAILURE_PRIORITIES:
        raise ValueError(f"unknown failure kind: {kind!r}")
    details = {
        "llm_failure": _("el modelo falló tras los reintentos"),
        "timeout": _("se agotó el tiempo de respuesta"),
        "no_credits": _("sin créditos de IA"),
    }
    return EscalationDecision(
        reason=kind, priority=FAILURE_PRIORITIES[kind], trigger_type=kind, detail=details[kind]
    )
