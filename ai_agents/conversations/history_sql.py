"""The statement that reads a conversation's history: one builder for the two readers (the
turn's first round trip, `store.turn_next`, and `history_rows` when nothing read it before)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ai_agents.models import Conversation
from ai_agents.rules.input_bound import input_max_chars
from erp.tenancy import rows

# (id, role, content, created_at, outcome): `outcome` is the reply's `metadata.outcome`
# (ai_agents/conversations/no_answer.py), UNANSWERED for a customer message the bot did not
# answer (its recorded result has no reply: a person held the conversation, a reaction...),
# else None.
HistoryRow = tuple[Any, str, str, datetime, str | None]
UNANSWERED = "unanswered"
_OUTCOME = (
    "COALESCE(metadata->>'outcome', CASE WHEN role = 'user'"
    f" AND jsonb_typeof(metadata->'result'->'reply') = 'null' THEN '{UNANSWERED}' END)"
)
PREVIOUS_INTENTS_MAX = 20  # the latest intents of a conversation given to the model


def history_limit(config: Mapping[str, Any]) -> int:
    """How many of the latest messages are read for the history (truncation picks from them)."""
    return max(int(config["max_messages"]) * 3, 20)


def history_statement(
    *,
    tenant_id: int,
    conversation_sql: str,
    conversation_params: list[Any],
    limit: int,
    before: Any = None,
    before_sql: rows.Statement | None = None,
    with_first: bool = False,
    max_chars: int,
) -> rows.Statement:
    """The latest `limit` messages, newest first; `with_first` (the `smart` strategy keeps the
    conversation's first message) adds the very first when it is older than those. Each text
    is cut to `max_chars` by PostgreSQL (a huge earlier message never reaches the prompt); each
    row carries the reply's recorded outcome (`metadata.outcome`, e.g. `no_answer`).
    `before_sql`: the moment as a subquery (the pending message read in the same round trip)."""
    where = (
        f"tenant_id = %s AND conversation_id = {conversation_sql} AND role IN ('user', 'assistant')"
    )
    where_params: list[Any] = [tenant_id, *conversation_params]
    if before_sql is None and before is not None:
        before_sql = ("%s", [before])
    if before_sql is not None:
        # Replies given since count; later customer messages (answered after this one) do not.
        where += f" AND (role = 'assistant' OR created_at < ({before_sql[0]}))"
        where_params += before_sql[1]
    select = (
        f"SELECT id, role, content, created_at, {_OUTCOME} AS outcome"  # noqa: S608
        f" FROM ai_agents_message WHERE {where}"
    )
    sql, params = f"{select} ORDER BY created_at DESC LIMIT %s", [*where_params, limit]
    if with_first:
        sql = f"({sql}) UNION ({select} ORDER BY created_at LIMIT 1)"
        params += where_params
    return (
        f"SELECT id, role, left(content, %s), created_at, outcome FROM ({sql}) h"  # noqa: S608
        " ORDER BY created_at DESC",
        [max_chars, *params],
    )


def conversation_history_statement(
    *,
    conversation: Conversation,
    config: Mapping[str, Any],
    conversation_ref: rows.Statement | None = None,
    before: Any = None,
    before_sql: rows.Statement | None = None,
) -> rows.Statement:
    """`history_statement` for `conversation` as the agent's history config asks (its latest
    messages, the first one with `smart`, each cut to its channel's input limit).
    `conversation_ref`: the conversation as SQL (default: its id as a parameter)."""
    conversation_sql, conversation_params = conversation_ref or ("%s", [conversation.pk])
    return history_statement(
        tenant_id=conversation.tenant_id,
        conversation_sql=conversation_sql,
        conversation_params=conversation_params,
        limit=history_limit(config),
        before=before,
        before_sql=before_sql,
        with_first=config["truncation_strategy"] == "smart",
        max_chars=input_max_chars(conversation.channel),
    )


def history_rows(
    *, conversation: Conversation, config: Mapping[str, Any], before: Any = None
) -> list[HistoryRow]:
    """The conversation's latest messages for its history (see `history_statement`)."""
    (outcome,) = rows.run_together(
        [conversation_history_statement(conversation=conversation, config=config, before=before)]
    )
    return list(outcome.rows or [])


def intents_statement(
    *, conversation: Conversation, conversation_ref: rows.Statement | None = None
) -> rows.Statement:
    """The latest intents detected on the conversation's replies, newest first.
    `conversation_ref`: the conversation as SQL (default: its id as a parameter)."""
    conversation_sql, conversation_params = conversation_ref or ("%s", [conversation.pk])
    return (
        "SELECT metadata->>'intent_detected' FROM ai_agents_message WHERE tenant_id = %s"  # noqa: S608
        f" AND conversation_id = {conversation_sql} AND role = 'assistant'"
        " AND metadata->>'intent_detected' IS NOT NULL ORDER BY created_at DESC LIMIT %s",
        [conversation.tenant_id, *conversation_params, PREVIOUS_INTENTS_MAX],
    )
