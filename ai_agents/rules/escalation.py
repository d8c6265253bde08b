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
                  short answers like "sí" are not a loop) and earlier ones among the last
                  `window` user messages are the same message `max_similar` times in all, the
                  current one included; also when the customer says they repeat themselves,
                  repeats a reference, or the assistant's last two answers are the same
                  (`ai_agents.rules.loops`) -> `conversation_loop`
- user_request:   {"phrases": [..], "exclude": [..]} (both optional): the request-for-a-person
                  detector (`ai_agents.rules.person_request`: phrase rules with negative
                  context, then the learned layer), plus the tenant's own phrases (whole
                  words, normalised); an `exclude` phrase present in the message vetoes the
                  detector -> `user_request`

`evaluate_escalation` checks every trigger and returns the matching one with the highest
priority (ties: config order), or None. Independently of the config, `model_requested=True`
(the model chose the `escalate` action) escalates with reason `model_request`, the priority of a
configured user_request trigger or medium; configured triggers of higher priority win over it.
Missing signals (sentiment/intent/confidence None) never fire their trigger. Every decision
says which `layer` decided: "rules" / "learned" (the detector's layers), "loop", "trigger"
(any other configured trigger), "model" (the model's own `escalate`); `detail` says why.
`failure_decision(kind)` gives the decision for llm_failure / timeout / no_credits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from django.utils.translation import gettext_noop

from ai_agents.rules.detail import detail
from ai_agents.rules.escalation_config import (
    MAX_MESSAGE_CHARS,
    MAX_TRIGGERS,
    PRIORITIES,
    TRIGGER_TYPES,
    USER_REQUEST_PHRASES,
    EscalationTrigger,
    FailureKind,
    TriggerType,
    parse_escalation_triggers,
)
from ai_agents.rules.loop_semantic import VectorOf
from ai_agents.rules.loops import loop_detail
from ai_agents.rules.loops import similar as _similar
from ai_agents.rules.person_request import PersonDecision, detect_person_request
from ai_agents.rules.text import contains_phrase, first_matching_phrase, normalize

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
    "budget_exhausted": "high",
}


@dataclass(frozen=True)
class EscalationDecision:
    reason: str
    priority: str
    trigger_type: str
    detail: str = ""
    message: str | None = None  # the trigger's own message, if configured
    layer: str = ""  # rules | learned | loop | trigger | model (see the module docstring)


def default_escalation_triggers() -> list[EscalationTrigger]:
    """What an agent without configured triggers gets: the built-in user request, high."""
    return [EscalationTrigger(type="user_request", priority="high")]


def similar_messages(a: str, b: str, *, similarity: float = 0.8) -> bool:
    """Same normalised text, token-set Jaccard or character ratio >= similarity."""
    return _similar(a, b, similarity=similarity)


Detector = Callable[[str], PersonDecision]


def _user_request(
    trigger: EscalationTrigger, text: str, detect: Detector
) -> tuple[str, str] | None:
    hit = first_matching_phrase(text, trigger.keywords, excludes=trigger.exclude)
    if hit:
        return detail(gettext_noop("el cliente pidió una persona («%(p)s»)"), p=hit), "trigger"
    if any(contains_phrase(text, phrase) for phrase in trigger.exclude):
        return None
    found = detect(text)
    if not found.requested:
        return None
    if found.layer == "learned":
        return detail(
            gettext_noop("parecido a una petición de persona: %(d)s"),
            d=found.detail,
            score=found.score,
        ), found.layer
    return detail(
        gettext_noop("el cliente pidió una persona («%(p)s»)"), p=found.detail
    ), found.layer


def _signal(trigger: EscalationTrigger, signals: dict[str, float | None]) -> str | None:
    """The detail of a sentiment or confidence trigger that fires, or None."""
    threshold = trigger.threshold
    if trigger.type == "confidence":
        confidence = signals["confidence"]
        if confidence is None or threshold is None or confidence >= threshold:
            return None
        return detail(gettext_noop("confianza %(c).2f < %(t).2f"), c=confidence, t=threshold)
    sentiment = signals["sentiment"]
    if sentiment is None or threshold is None:
        return None
    if threshold > 0:  # the negativity form: above the threshold
        if -sentiment <= threshold:
            return None
        return detail(gettext_noop("sentimiento %(s).2f < %(t).2f"), s=sentiment, t=-threshold)
    if sentiment > threshold:
        return None
    return detail(gettext_noop("sentimiento %(s).2f <= %(t).2f"), s=sentiment, t=threshold)


def _check(
    trigger: EscalationTrigger,
    *,
    text: str,
    signals: dict[str, float | None],
    intent: str | None,
    history: tuple[Sequence[str], Sequence[str]],
    detect: Detector,
    loop_vectors: VectorOf | None = None,
) -> tuple[str, str] | None:
    """(detail, layer) of a firing trigger, or None. `history`: (earlier user texts, earlier
    assistant texts), oldest first."""
    if trigger.type == "keyword":
        hit = first_matching_phrase(text, trigger.keywords, excludes=trigger.exclude)
        return (detail(gettext_noop("palabra clave «%(kw)s»"), kw=hit), "trigger") if hit else None
    if trigger.type == "user_request":
        return _user_request(trigger, text, detect)
    if trigger.type in ("sentiment", "confidence"):
        signal = _signal(trigger, signals)
        return (signal, "trigger") if signal else None
    if trigger.type == "intent":
        if not intent or normalize(intent) not in {normalize(i) for i in trigger.intents}:
            return None
        return detail(gettext_noop("intención «%(i)s»"), i=intent), "trigger"
    loop = loop_detail(
        text,
        recent_user_texts=history[0],
        assistant_texts=history[1],
        max_similar=trigger.max_similar,
        window=trigger.window,
        similarity=trigger.similarity,
        min_words=trigger.min_words,
        vector_of=loop_vectors,
    )
    return (loop, "loop") if loop else None


def _better(decision: EscalationDecision, best: EscalationDecision | None) -> bool:
    return best is None or PRIORITIES.index(decision.priority) > PRIORITIES.index(best.priority)


def evaluate_escalation(
    triggers: Sequence[EscalationTrigger],
    *,
    text: str,
    sentiment: float | None,
    intent: str | None,
    confidence: float | None,
    recent_user_texts: Sequence[str],
    model_requested: bool,
    model_reason: str | None,
    assistant_texts: Sequence[str] = (),
    detect: Detector | None = None,
    skip_types: Collection[str] = (),
    loop_vectors: VectorOf | None = None,
) -> EscalationDecision | None:
    """The highest-priority firing trigger (ties: config order), or None. `recent_user_texts`
    / `assistant_texts`: the earlier user / assistant messages, oldest first, WITHOUT the
    current one (`text`). `detect` replaces the request-for-a-person detector (the eval passes
    one with the model loaded directly). `skip_types`: trigger types not checked (already clear
    on the same text and history); a user_request trigger still gives `model_requested` its
    priority. `loop_vectors`: query vectors for the re-ask by meaning (None: not checked)."""
    best: EscalationDecision | None = None
    signals = {"sentiment": sentiment, "confidence": confidence}
    for trigger in triggers:
        if trigger.type in skip_types:
            continue
        fired = _check(
            trigger,
            text=text,
            signals=signals,
            intent=intent,
            history=(recent_user_texts, assistant_texts),
            detect=detect or detect_person_request,
            loop_vectors=loop_vectors,
        )
        if fired is None:
            continue
        decision = EscalationDecision(
            reason=REASONS[trigger.type],
            priority=trigger.priority,
            trigger_type=trigger.type,
            detail=fired[0],
            message=trigger.message,
            layer=fired[1],
        )
        if _better(decision, best):
            best = decision
    if model_requested:
        user_request = next((t for t in triggers if t.type == "user_request"), None)
        decision = EscalationDecision(
            reason="model_request",
            priority=user_request.priority if user_request else "medium",
            trigger_type="model",
            detail=(model_reason or "").strip()[:500],
            message=user_request.message if user_request else None,
            layer="model",
        )
        if _better(decision, best):
            best = decision
    return best


def failure_decision(kind: FailureKind) -> EscalationDecision:
    """The decision after an LLM failure, a timeout, a tenant without credits or with its
    monthly budget spent ("handoff_only")."""
    if kind not in FAILURE_PRIORITIES:
        raise ValueError(f"unknown failure kind: {kind!r}")
    details = {
        "llm_failure": detail(gettext_noop("el modelo falló tras los reintentos")),
        "timeout": detail(gettext_noop("se agotó el tiempo de respuesta")),
        "no_credits": detail(gettext_noop("sin créditos de IA")),
        "budget_exhausted": detail(gettext_noop("presupuesto agotado")),
    }
    return EscalationDecision(
        reason=kind, priority=FAILURE_PRIORITIES[kind], trigger_type=kind, detail=details[kind]
    )


__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_TRIGGERS",
    "PRIORITIES",
    "REASONS",
    "TRIGGER_TYPES",
    "USER_REQUEST_PHRASES",
    "EscalationDecision",
    "EscalationTrigger",
    "FailureKind",
    "TriggerType",
    "default_escalation_triggers",
    "evaluate_escalation",
    "failure_decision",
    "parse_escalation_triggers",
    "similar_messages",
]
