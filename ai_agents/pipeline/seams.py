"""The one call site of each pure pipeline unit used by the orchestration (run.py, steps.py).

Each function adapts the agent's stored configuration to a unit in ai_agents.pipeline
(text, escalation, history, prompt, limits), so the orchestration never depends on a unit's
internals.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ai_agents.pipeline import escalation, history, intent, limits, prompt
from ai_agents.pipeline.escalation import EscalationDecision as Decision
from ai_agents.pipeline.history import HistoryItem as Turn
from ai_agents.pipeline.limits import LimitResult

__all__ = [
    "Decision",
    "LimitResult",
    "Turn",
    "conversation_message_limit",
    "evaluate_escalation",
    "failure_decision",
    "final_intent",
    "intent_prompt",
    "keyword_intent",
    "notice_once",
    "render_system_prompt",
    "tenant_tokens_reserve",
    "tenant_tokens_settle",
    "truncate_history",
    "with_intent_actions",
]


@functools.lru_cache(maxsize=512)
def _parsed_triggers(raw: str) -> list[escalation.EscalationTrigger]:
    return escalation.parse_escalation_triggers(json.loads(raw))


@functools.lru_cache(maxsize=512)
def _parsed_intents(raw: str) -> intent.IntentConfig:
    return intent.parse_intent_config(json.loads(raw))


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def with_intent_actions(
    triggers: Sequence[Mapping[str, Any]], config: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """The agent's triggers, plus an intent trigger (medium priority) for every configured
    intent whose `action` is "trigger_escalation" and that no intent trigger names yet."""
    parsed = _parsed_intents(_key(config))
    wanted = [d.intent for d in parsed.intents if d.action == "trigger_escalation"]
    if not wanted:
        return list(triggers)
    covered = {
        name
        for trigger in _parsed_triggers(_key(list(triggers)))
        if trigger.type == "intent"
        for name in trigger.intents
    }
    extra = [
        {"type": "intent", "condition": {"intents": [name]}, "priority": "medium"}
        for name in wanted
        if name not in covered
    ]
    return [*triggers, *extra]


@functools.lru_cache(maxsize=512)
def _intent_prompt(raw: str, language: str | None) -> str:
    """(`language`: the active one, part of the cache key: the heading is translated.)"""
    from django.utils.translation import gettext as _

    parsed = _parsed_intents(raw)
    if parsed.mode == "keyword" or not parsed.intents:
        return ""
    lines = [_("## Intenciones (campo intent; «otra» si ninguna encaja):")]
    for item in parsed.intents:
        line = f"- {item.intent}"
        if item.description:
            line += f": {item.description}"
        if item.examples:
            line += " (" + _("p. ej.") + " " + "; ".join(f"«{e}»" for e in item.examples[:3]) + ")"
        lines.append(line)
    return "\n".join(lines)


def intent_prompt(config: Mapping[str, Any]) -> str:
    """The configured intents for the model (llm and hybrid modes), or ""."""
    from django.utils.translation import get_language

    return _intent_prompt(_key(config), get_language())


def evaluate_escalation(
    triggers: Sequence[Mapping[str, Any]],
    *,
    text: str,
    sentiment: float | None,
    intent: str | None,
    confidence: float | None,
    recent_user_texts: list[str],
    model_requested: bool,
    model_reason: str | None,
) -> Decision | None:
    """The matching trigger of highest priority (ties: config order), or None."""
    return escalation.evaluate_escalation(
        _parsed_triggers(_key(list(triggers))),
        text=text,
        sentiment=sentiment,
        intent=intent,
        confidence=confidence,
        recent_user_texts=recent_user_texts,
        model_requested=model_requested,
        model_reason=model_reason,
    )


def keyword_intent(text: str, config: Mapping[str, Any]) -> str | None:
    """The intent matched by keywords (modes keyword and hybrid), before any model call."""
    parsed = _parsed_intents(_key(config))
    if parsed.mode == "llm":
        return None
    match = intent.detect_keyword_intent(text, parsed)
    return match.intent if match else None


def final_intent(
    text: str, config: Mapping[str, Any], *, llm_intent: str | None, llm_confidence: float | None
) -> str | None:
    """Hybrid: a keyword match wins, else the model's intent field; per the configured mode."""
    match = intent.resolve_intent(
        text, _parsed_intents(_key(config)), llm_intent=llm_intent, llm_confidence=llm_confidence
    )
    return match.intent if match else None


def failure_decision(kind: str) -> Decision:
    return escalation.failure_decision(kind)  # type: ignore[arg-type]


def truncate_history(
    items: Sequence[Turn],
    *,
    strategy: str,
    max_messages: int,
    token_budget: int | None,
    summary: str | None = None,
) -> history.TruncatedHistory:
    """The history sent to the model (`items`), with `summary` as the summary item of the cut
    middle when given; without it, `needs_summary_of` lists what was cut."""
    return history.truncate_history(
        items,
        strategy=strategy,  # type: ignore[arg-type]
        max_messages=max_messages,
        token_budget=token_budget,
        summary=summary,
    )


def render_system_prompt(
    template: str,
    *,
    company_name: str,
    agent_name: str,
    customer_name: str,
    now: datetime,
    session_variables: Mapping[str, Any],
) -> str:
    return prompt.render_system_prompt(
        template,
        company_name=company_name,
        agent_name=agent_name,
        customer_name=customer_name,
        now=now,
        session_variables=session_variables,
    )


def conversation_message_limit(conversation_id: Any, *, limit: int = 20) -> LimitResult:
    """RN-4 with the agent's `messages_per_minute` (same key as the unit's default helper)."""
    return limits.hit(f"conv-msgs:{conversation_id}", limit=limit, window_s=60)


def tenant_tokens_reserve(tenant_id: Any, tokens: int, *, limit: int) -> LimitResult:
    """Counts the estimated prompt tokens against the tenant's per-minute budget."""
    return limits.tenant_token_limit(tenant_id, tokens, limit)


def tenant_tokens_settle(tenant_id: Any, difference: int) -> None:
    """Corrects the window with real usage minus the estimate."""
    if difference:
        limits.tenant_tokens_add(tenant_id, difference)


def notice_once(key: str, window_s: float) -> bool:
    return limits.notice_once(key, window_s)
