"""The engine's two escalation checks (ai_agents/conversations/engine.py), with what the rules
need from the turn: before the model (`early_escalation`: the request-for-a-person detector,
keyword triggers, loops) and after it (`model_escalation`: sentiment, intent, confidence, the
model's own `escalate`).

The detector's learned layer (requests for a person) reuses the query vector retrieval computes
for local knowledge bases (`retrieval_prefetch` starts it when the message arrives), and
computes it where no knowledge base did only once its screen (words alone) leaves the question
open; when it waits for that vector (~20 ms of CPU), the database connection goes back to the
pool first. The re-ask by meaning (loops) takes vectors from the cache, and computes one only
for a message the bot answered (or the one being answered), once an earlier question shares
words with the message (a message written while a person attended was never the bot's
question: cache only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ai_agents.conversations.history_sql import UNANSWERED
from ai_agents.conversations.no_answer import NO_ANSWER
from ai_agents.knowledge.embeddings import cached_local_query_vector
from ai_agents.rules.escalation import EscalationDecision, evaluate_escalation
from ai_agents.rules.loop_semantic import VectorOf
from ai_agents.rules.person_request import (
    PersonDecision,
    cached_query_vector,
    detect_person_request,
)
from erp.db import connection_release

if TYPE_CHECKING:
    from ai_agents.conversations.turn import Turn


def _assistant_texts(turn: Turn) -> list[str]:
    """The earlier answers; the fallback message (a model failure, counted apart) and the
    no-information answer (itself an offer of a person) are left out: two failures, or two
    questions the documents do not cover, in a row are not the bot repeating an answer. The
    no-information answer is known by its recorded outcome (`metadata.outcome`, read with the
    history), the same signal the offer uses: a model's paraphrase of the sentence counts."""
    fallback = turn.agent.fallback_message
    return [
        item.content
        for item in turn.history
        if item.role == "assistant" and item.content != fallback and item.outcome != NO_ANSWER
    ]


def _embed_released(text: str) -> tuple[float, ...]:
    """The shared query vector, waited for without holding a database connection."""
    connection_release()
    return cached_query_vector(text)


def _loop_vectors(turn: Turn) -> VectorOf:
    """The re-ask by meaning's vectors (see the module docstring)."""
    handled = {turn.text} | {
        item.content for item in turn.history if item.role == "user" and item.outcome != UNANSWERED
    }

    def vector_of(text: str) -> tuple[float, ...] | None:
        found = cached_local_query_vector(text)
        if found is None and text in handled:
            found = _embed_released(text)
        return found

    return vector_of


def _detect(text: str) -> PersonDecision:
    return detect_person_request(text, embed=_embed_released)


# The trigger types decided by the turn's text and history alone: what early_escalation found
# for them holds after the model too (same text, same history, a deterministic detector).
TEXT_TRIGGERS = frozenset({"keyword", "user_request", "loop_detection"})


def early_escalation(turn: Turn, intent: str | None) -> EscalationDecision | None:
    """The triggers that need no model, on the turn's text and history."""
    assert turn.rules is not None  # set by phases.early_triggers
    decision = evaluate_escalation(
        turn.rules.triggers,
        text=turn.text,
        sentiment=None,
        intent=intent,
        confidence=None,
        recent_user_texts=turn.recent,
        assistant_texts=_assistant_texts(turn),
        model_requested=False,
        model_reason=None,
        detect=_detect,
        loop_vectors=_loop_vectors(turn),
    )
    turn.text_triggers_clear = decision is None
    return decision


def model_escalation(
    turn: Turn, *, parsed: Any, signals: dict[str, Any]
) -> EscalationDecision | None:
    """The triggers after the model's answer (`signals`: sentiment, intent, confidence), the
    model's own `escalate`. (The assistant repeating itself is judged on the history, before
    the model: two answers that are the same in a row offer a person at the next message; one
    repeat alone may be right, e.g. two questions answered by the same passage offline.)
    The text-only triggers early_escalation found clear are not run again (the detector and
    the loop rules are most of this check's cost, and they would decide the same)."""
    assert turn.rules is not None
    clear = turn.text_triggers_clear
    return evaluate_escalation(
        turn.rules.triggers,
        text=turn.text,
        sentiment=signals["sentiment"],
        intent=signals["intent"],
        confidence=signals["confidence"],
        recent_user_texts=turn.recent,
        assistant_texts=() if clear else _assistant_texts(turn),
        skip_types=TEXT_TRIGGERS if clear else (),
        model_requested=parsed.name == "escalate",
        model_reason=str(parsed.args.get("reason") or "") or None,
        detect=_detect,
    )


def escalation_meta(decision: EscalationDecision) -> dict[str, str]:
    """What the reply's metadata keeps of the decision (`escalation`), for the inbox and API."""
    return {
        "reason": decision.reason,
        "priority": decision.priority,
        "layer": decision.layer,
        "detail": str(decision.detail),  # as worded now (the conversation keeps its parts)
    }
