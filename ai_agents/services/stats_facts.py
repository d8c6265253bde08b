"""The statistics facts a conversation keeps (`Conversation.customer_messages` ...
`no_answer_replies`), so that a year's figures read conversations, not a million messages.

Each fact is written where its message is written, folded into the UPDATE of the
conversation's counters that the same statement or transaction already makes (no extra round
trip): the customer's message (`customer_message_changes`: inbound.py, known_thread.py,
rating.py), the bot's reply (`bot_reply_changes`: conversations/record.py) and a person's reply
(`staff_reply_updates`: services/handoff.py). Rows made before the facts existed are filled in
by `conversation_facts_backfill` (migration 0023), computed in SQL from their messages with the
same definitions as stats_sql.py had: a fact written by the pipeline and one backfilled agree
(tested). The cost (`cost_usd`) is added by the usage ledger's own statement
(erp/llm/conversation_cost.py); `conversation_cost_backfill` (migration 0025) sums the rows
written before.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.expressions import RawSQL

from erp.llm.models import UsageLog
from erp.tenancy import rows
from erp.tenancy.rls import ALL_SETTING

BACKFILL_BATCH = 2000

# Whole milliseconds from `earlier` to `later` (column names of this module, never input).
_MS = "round(extract(epoch FROM {later} - {earlier}) * 1000)::integer"


def customer_message_changes(at: dt.datetime) -> dict[str, Any]:
    """A customer's message stored at `at`."""
    return {
        "customer_messages": rows.Add(1),
        "first_customer_at": rows.Sql("COALESCE(first_customer_at, %s)", (at,)),
    }


def bot_reply_changes(*, at: dt.datetime, no_answer: bool) -> dict[str, Any]:
    """The bot's reply stored at `at` (the first one after the customer's first message sets
    the first response)."""
    ms = _MS.format(later="%s::timestamptz", earlier="first_customer_at")
    first = f"COALESCE(first_bot_response_ms, CASE WHEN %s >= first_customer_at THEN {ms} END)"
    return {
        "assistant_messages": rows.Add(1),
        "first_bot_response_ms": rows.Sql(first, (at, at)),
        "no_answer_replies": rows.Add(int(no_answer)),
    }


def staff_reply_updates(at: dt.datetime) -> dict[str, Any]:
    """`QuerySet.update` keywords for a person's reply stored at `at`: the first one after the
    escalation sets the people's first response."""
    ms = _MS.format(later="%s::timestamptz", earlier="escalated_at")
    first = f"COALESCE(first_human_response_ms, CASE WHEN %s >= escalated_at THEN {ms} END)"
    return {
        "assistant_messages": F("assistant_messages") + 1,
        "staff_involved": True,
        "first_human_response_ms": RawSQL(first, (at, at)),  # noqa: S611  # our SQL, values bound
    }


_FIRST = (
    "(SELECT min(x.created_at) FROM ai_agents_message x WHERE x.tenant_id = m.tenant_id"
    " AND x.conversation_id = m.id AND {condition})"
)
_FIRST_BOT = _FIRST.format(
    condition="x.role = 'assistant' AND x.author_id IS NULL AND x.created_at >= m.first_customer"
)
_FIRST_PERSON = _FIRST.format(
    condition="x.author_id IS NOT NULL AND x.created_at >= m.escalated_at"
)

BACKFILL_SQL = f"""
WITH m AS (
  SELECT c.id, c.tenant_id, c.escalated_at, n.*
  FROM ai_agents_conversation c CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE role = 'user') AS customer,
           count(*) FILTER (WHERE role = 'assistant') AS assistant,
           min(created_at) FILTER (WHERE role = 'user') AS first_customer,
           coalesce(bool_or(author_id IS NOT NULL), false) AS staff,
           count(*) FILTER (WHERE (metadata -> 'outcome') = '"no_answer"'::jsonb) AS no_answer
    FROM ai_agents_message WHERE tenant_id = c.tenant_id AND conversation_id = c.id
  ) n
  WHERE c.id = ANY(%(ids)s)
), f AS (
  SELECT m.*, {_FIRST_BOT} AS first_bot,
    CASE WHEN m.escalated_at IS NOT NULL THEN {_FIRST_PERSON} END AS first_person
  FROM m
)
UPDATE ai_agents_conversation c SET
  customer_messages = f.customer,
  assistant_messages = f.assistant,
  first_customer_at = f.first_customer,
  first_bot_response_ms = {_MS.format(later="f.first_bot", earlier="f.first_customer")},
  first_human_response_ms = {_MS.format(later="f.first_person", earlier="f.escalated_at")},
  staff_involved = f.staff,
  no_answer_replies = f.no_answer
FROM f WHERE c.id = f.id
"""  # noqa: S608


# The cost of each conversation: the sum of its usage rows (the ledger's covering index
# usage_tenant_conversation), set, not added, so a second run changes nothing.
COST_BACKFILL_SQL = f"""
UPDATE ai_agents_conversation c SET cost_usd = coalesce((
  SELECT sum(u.cost_usd) FROM {UsageLog._meta.db_table} u
  WHERE u.tenant_id = c.tenant_id AND u.conversation_id = c.id), 0)
WHERE c.id = ANY(%(ids)s)
"""  # noqa: S608


def conversation_facts_backfill(*, cursor: Any, batch: int = BACKFILL_BATCH) -> int:
    """Every conversation's facts computed from its messages, `batch` conversations per
    statement, each batch its own transaction (by id; works on an empty table). `cursor`: a
    migration's, the bench's or a test's (a Django cursor). Returns how many conversations were
    filled in."""
    return _backfill(cursor, BACKFILL_SQL, batch)


def conversation_cost_backfill(*, cursor: Any, batch: int = BACKFILL_BATCH) -> int:
    """Every conversation's `cost_usd` summed from its usage rows (migration 0025), like
    `conversation_facts_backfill`: by batches, each its own transaction."""
    return _backfill(cursor, COST_BACKFILL_SQL, batch)


def _backfill(cursor: Any, sql: str, batch: int) -> int:
    done, after = 0, None
    while True:
        with transaction.atomic(using=cursor.db.alias):
            # Every tenant's rows (row-level security is forced, for the owner too).
            cursor.execute(f"SELECT set_config('{ALL_SETTING}', 'on', true)")
            cursor.execute(
                "SELECT id FROM ai_agents_conversation WHERE %(after)s::uuid IS NULL"
                " OR id > %(after)s::uuid ORDER BY id LIMIT %(n)s",
                {"after": after, "n": batch},
            )
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return done
            cursor.execute(sql, {"ids": ids})
        done += len(ids)
        after = ids[-1]
