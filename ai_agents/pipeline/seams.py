"""The one call site of each pure pipeline unit used by the orchestration (run.py, steps.py).

Each function adapts the agent's stored configuration to a unit in ai_agents.pipeline
(text, escalation, history, prompt), ai_agents.rules (input bounds) or erp.ratelimit, so the
orchestration never depends on a unit's internals.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ai_agents.pipeline import escalation, history, intent, prompt
from ai_agents.pipeline.escalation import EscalationDecision as Decision
from ai_agents.pipeline.history import HistoryItem as Turn
from ai_agents.rules import input_bound as input_rules
from erp import ratelimit
from erp.ratelimit import LimitResult

__all__ = [
    "Decision",
    "LimitResult",
    "Rules",
    "Turn",
    "conversation_message_limit",
    "evaluate_escalation",
    "failure_decision",
    "final_intent",
    "input_bound",
    "input_max_chars",
    "intent_prompt",
    "keyword_intent",
    "notice_once",
    "render_system_prompt",
    "rules_for",
    "tenant_tokens_reserve",
    "tenant_tokens_settle",
    "truncate_history",
]


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
    from django.utils.translation import gettext as _

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
    from django.utils.translation import get_language

    return _intent_prompt(rules.key, get_language())


def evaluate_escalation(
    rules: Rules,
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
        rules.triggers,
        text=text,
        sentiment=sentiment,
        intent=intent,
        confidence=confidence,
        recent_user_texts=recent_user_texts,
        model_requested=model_requested,
        model_reason=model_reason,
    )


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
    return ratelimit.hit(f"conv-msgs:{conversation_id}", limit=limit, window_s=60)


def tenant_tokens_reserve(tenant_id: Any, tokens: int, *, limit: int) -> LimitResult:
    """Counts the estimated prompt tokens against the tenant's per-minute budget."""
    key = f"tenant-tokens:{tenant_id}"
    return ratelimit.hit(key, limit=limit, window_s=60, amount=max(0, tokens))


def tenant_tokens_settle(tenant_id: Any, difference: int) -> None:
    """Corrects the window with real usage minus the estimate."""
    if difference:
        ratelimit.add(f"tenant-tokens:{tenant_id}", amount=difference, window_s=60)


def input_bound(text: str, channel: str) -> tuple[str, int | None]:
    """The part of a customer message the pipeline uses, and its full length if it was cut."""
    return input_rules.input_bound(text, channel)


def input_max_chars(channel: str) -> int:
    return input_rules.input_max_chars(channel)


def notice_once(key: str, window_s: float) -> bool:
    return ratelimit.notice_once(key, window_s)
