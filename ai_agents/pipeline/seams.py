"""The one call site of each pure pipeline unit (ai_agents.pipeline.text/intent/escalation/
history/prompt/limits, written on a parallel branch).

Until those units are merged, the bodies here are small interim versions with the same
behaviour the orchestration relies on; after the merge each function delegates to the unit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ai_agents.agent_config import HUMAN_AGENT_EXCLUDES


@dataclass(frozen=True)
class Decision:
    reason: str
    priority: str
    trigger_type: str
    detail: str = ""
    message: str | None = None


@dataclass(frozen=True)
class Turn:
    role: str  # user | assistant | system | tool
    content: str


_PRIORITY_ORDER = {"low": 0, "medium": 1, "high": 2, "urgent": 3}
_NON_WORD = re.compile(r"[^0-9a-z]+")
_USER_REQUEST = (
    "hablar con una persona",
    "hablar con un humano",
    "hablar con un agente",
    "hablar con alguien",
    "pasame con un agente",
    "pasame con una persona",
    "un agente por favor",
    "talk to a human",
    "speak to a human",
    "real person",
)


def _words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return [w for w in _NON_WORD.split(folded) if w]


def _spans(hay: list[str], needle: list[str]) -> list[tuple[int, int]]:
    n = len(needle)
    return [(i, i + n) for i in range(len(hay) - n + 1) if n and hay[i : i + n] == needle]


def contains_phrase(text: str, phrase: str, *, excludes: Iterable[str] = ()) -> bool:
    hay = _words(text)
    blocked = [s for ex in excludes for s in _spans(hay, _words(ex))]
    for start, end in _spans(hay, _words(phrase)):
        if not any(b0 <= start and end <= b1 for b0, b1 in blocked):
            return True
    return False


def _text_decision(trigger: Mapping[str, Any], text: str) -> Decision | None:
    condition = trigger.get("condition") or {}
    kind = trigger["type"]
    if kind == "keyword":
        excludes = condition.get("exclude") or ()
        for keyword in condition.get("keywords") or ():
            if contains_phrase(text, keyword, excludes=excludes):
                return Decision("keyword_match", trigger["priority"], kind, keyword)
    if kind == "user_request":
        phrases = [*_USER_REQUEST, *(condition.get("phrases") or ())]
        excludes = [*HUMAN_AGENT_EXCLUDES, *(condition.get("exclude") or ())]
        for phrase in phrases:
            if contains_phrase(text, phrase, excludes=excludes):
                return Decision("user_request", trigger["priority"], kind, phrase)
    return None


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
    found: list[Decision] = []
    for trigger in triggers:
        condition = trigger.get("condition") or {}
        kind = trigger["type"]
        decision = _text_decision(trigger, text)
        if (
            kind == "sentiment"
            and sentiment is not None
            and sentiment <= float(condition.get("threshold", -0.5))
        ):
            decision = Decision("negative_sentiment", trigger["priority"], kind)
        if kind == "intent" and intent and intent in (condition.get("intents") or ()):
            decision = Decision("intent_match", trigger["priority"], kind, intent)
        if (
            kind == "confidence"
            and confidence is not None
            and confidence < float(condition.get("threshold", 0.5))
        ):
            decision = Decision("low_confidence", trigger["priority"], kind)
        if decision is not None:
            found.append(decision)
    if model_requested:
        found.append(Decision("model_request", "medium", "model", model_reason or ""))
    if not found:
        return None
    return max(found, key=lambda d: _PRIORITY_ORDER.get(d.priority, 1))


def failure_decision(kind: str) -> Decision:
    priority = "urgent" if kind == "no_credits" else "high"
    return Decision(kind, priority, "failure")


def truncate_history(
    items: Sequence[Turn], *, strategy: str, max_messages: int, token_budget: int | None
) -> list[Turn]:
    """Interim: the last `max_messages` items (oldest dropped first)."""
    return list(items[-max_messages:]) if max_messages else []


def render_system_prompt(
    template: str,
    *,
    company_name: str,
    agent_name: str,
    customer_name: str,
    now: datetime,
    session_variables: Mapping[str, Any],
) -> str:
    values = {
        **{str(k): str(v) for k, v in session_variables.items()},
        "company_name": company_name,
        "agent_name": agent_name,
        "customer_name": customer_name,
        "current_date": now.strftime("%d/%m/%Y %H:%M"),
    }
    return re.sub(
        r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", lambda m: values.get(m.group(1), ""), template
    )


@dataclass(frozen=True)
class LimitResult:
    allowed: bool
    count: int
    retry_after_s: int


def hit(key: str, *, limit: int, window_s: int, amount: int = 1) -> LimitResult:
    """Interim fixed-window counter on the Redis cache (atomic INCR)."""
    import time as _time

    from django.core.cache import cache

    now = _time.time()
    window = int(now // window_s)
    full_key = f"limit:{key}:{window}"
    cache.add(full_key, 0, timeout=window_s + 1)
    count = cache.incr(full_key, amount)
    retry_after = max(1, int((window + 1) * window_s - now + 0.999))
    return LimitResult(allowed=count <= limit, count=count, retry_after_s=retry_after)


def conversation_message_limit(conversation_id: Any, *, limit: int = 20) -> LimitResult:
    return hit(f"conv-msgs:{conversation_id}", limit=limit, window_s=60)


def notice_once(key: str, window_s: int) -> bool:
    from django.core.cache import cache

    return bool(cache.add(f"notice:{key}", 1, timeout=window_s))
