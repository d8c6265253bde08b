"""The statistics statement: one round trip, computed in PostgreSQL over indexed columns.

The period's conversations (`started_at` in the tenant's calendar days, index
`conv_tenant_started`) are read once (`conv`), each with a few facts found by index probes
(`facts`): its first customer message, the bot's first reply after it, the first staff message
after the escalation (`msg_staff`), whether a person touched it (`msg_staff`) and whether a new
conversation followed it within 72 hours (`conv_previous`). Every figure is then an aggregate
of `facts`, built into one JSON object; the messages and the cost are counted per conversation
from covering indexes alone (`msg_turns`, `usage_tenant_conversation`): a join would read the
tenant's whole table. The no-answer replies of those conversations come from `msg_no_answer`,
each with the customer message just before it.

Definitions (README "Statistics"):
- resolved by the AI: closed or expired, never escalated, never claimed or assigned, no staff
  message, and no conversation of the same thread started within 72 h of its end;
- first response: bot = first bot reply after the first customer message; people = first staff
  message after the escalation;
- messages: customer and assistant messages (bot and staff) of the period's conversations;
- cost: the usage ledger rows of the period's conversations.
"""

from __future__ import annotations

from ai_agents.models import Conversation, Message
from erp.llm.models import UsageLog

REOPEN_HOURS = 72
QUESTIONS_MAX = 5000  # the latest no-answer replies read per request (grouped in Python)
QUESTION_CHARS = 300

_CONV = Conversation._meta.db_table
_MSG = Message._meta.db_table
_USAGE = UsageLog._meta.db_table


def _msg_probe(condition: str) -> str:
    """The time of the conversation's first message matching `condition` (index probe)."""
    return (
        f"(SELECT m.created_at FROM {_MSG} m WHERE m.tenant_id = %(tenant)s "  # noqa: S608
        f"AND m.conversation_id = conv.id AND {condition} ORDER BY m.created_at LIMIT 1)"
    )


def _ms(later: str, earlier: str) -> str:
    return f"(extract(epoch FROM {later} - {earlier}) * 1000)"


def _percentiles(later: str, earlier: str) -> str:
    value = _ms(later, earlier)  # column names of this module, never input
    return (
        "(SELECT json_build_object("  # noqa: S608
        f"'p50', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY {value})), "
        f"'p90', round(percentile_cont(0.9) WITHIN GROUP (ORDER BY {value})), "
        f"'count', count(*)) FROM facts WHERE {later} IS NOT NULL AND {earlier} IS NOT NULL)"
    )


_STAFF = "m.author_id IS NOT NULL"

_FACTS = f"""
facts AS MATERIALIZED (
  SELECT conv.*, fu.at AS first_user,
    {_msg_probe("m.role = 'assistant' AND m.author_id IS NULL AND m.created_at >= fu.at")}
      AS first_bot,
    CASE WHEN conv.escalated_at IS NOT NULL THEN
      {_msg_probe(_STAFF + " AND m.created_at >= conv.escalated_at")} END AS first_person,
    (conv.status IN ('closed', 'expired') AND conv.escalated_at IS NULL AND NOT conv.held
     AND NOT EXISTS (SELECT 1 FROM {_MSG} m WHERE m.tenant_id = %(tenant)s
                     AND m.conversation_id = conv.id AND {_STAFF})
     AND NOT EXISTS (SELECT 1 FROM {_CONV} n WHERE n.tenant_id = %(tenant)s
                     AND n.previous_conversation_id = conv.id
                     AND n.started_at < coalesce(conv.closed_at, conv.started_at)
                                        + interval '{REOPEN_HOURS} hours')) AS resolved
  FROM conv
  LEFT JOIN LATERAL (
    SELECT m.created_at AS at FROM {_MSG} m WHERE m.tenant_id = %(tenant)s
    AND m.conversation_id = conv.id AND m.role = 'user' ORDER BY m.created_at LIMIT 1
  ) fu ON true
)"""  # noqa: S608

_DAYS = """(SELECT coalesce(json_agg(d ORDER BY d.day), '[]') FROM (
  SELECT to_char(started_at AT TIME ZONE %(tz)s, 'YYYY-MM-DD') AS day,
         count(*) AS conversations,
         count(*) FILTER (WHERE escalated_at IS NOT NULL) AS escalated,
         count(*) FILTER (WHERE resolved) AS resolved_by_ai
  FROM facts GROUP BY 1) d)"""

_REASONS = """(SELECT coalesce(json_agg(r ORDER BY r.count DESC, r.reason), '[]') FROM (
  SELECT escalation_reason AS reason, count(*) AS count
  FROM facts WHERE escalated_at IS NOT NULL GROUP BY 1) r)"""

# The partial index msg_no_answer is on exactly this expression.
NO_ANSWER_CONDITION = "(a.metadata -> 'outcome') = '\"no_answer\"'::jsonb"

_QUESTIONS = f"""(SELECT coalesce(json_agg(q.text ORDER BY q.at), '[]') FROM (
  SELECT left(q.content, {QUESTION_CHARS}) AS text, a.created_at AS at
  FROM conv
  JOIN {_MSG} a ON a.tenant_id = %(tenant)s AND a.conversation_id = conv.id
       AND {NO_ANSWER_CONDITION}
  CROSS JOIN LATERAL (
    SELECT m.content FROM {_MSG} m WHERE m.tenant_id = %(tenant)s
    AND m.conversation_id = conv.id AND m.role = 'user' AND m.created_at <= a.created_at
    ORDER BY m.created_at DESC LIMIT 1
  ) q
  ORDER BY a.created_at DESC LIMIT {QUESTIONS_MAX}) q)"""  # noqa: S608


def stats_statement(*, agent: bool, channel: bool) -> str:
    """The statement for the filters in use (parameters: tenant, start, end, tz, agent,
    channel)."""
    filters = " AND c.agent_id = %(agent)s" if agent else ""
    filters += " AND c.channel = %(channel)s" if channel else ""
    return f"""
WITH conv AS MATERIALIZED (
  SELECT c.id, c.status, c.started_at, c.closed_at, c.escalated_at, c.escalation_reason,
         c.satisfaction_rating,
         (c.assigned_to_id IS NOT NULL OR c.escalated_to_id IS NOT NULL
          OR c.claimed_at IS NOT NULL) AS held
  FROM {_CONV} c
  WHERE c.tenant_id = %(tenant)s AND c.started_at >= %(start)s AND c.started_at < %(end)s
  {filters}
), {_FACTS}
SELECT json_build_object(
  'conversations', (SELECT count(*) FROM facts),
  'resolved_by_ai', (SELECT count(*) FROM facts WHERE resolved),
  'escalated', (SELECT count(*) FROM facts WHERE escalated_at IS NOT NULL),
  'csat_average', (SELECT round(avg(satisfaction_rating), 2)::text FROM facts),
  'csat_responses', (SELECT count(satisfaction_rating) FROM facts),
  'bot', {_percentiles("first_bot", "first_user")},
  'people', {_percentiles("first_person", "escalated_at")},
  'messages', (SELECT count(*) FROM conv CROSS JOIN LATERAL (
                 SELECT 1 FROM {_MSG} m WHERE m.tenant_id = %(tenant)s
                 AND m.conversation_id = conv.id AND m.role IN ('user', 'assistant')) x),
  'cost_usd', (SELECT coalesce(sum(x.cost_usd), 0)::text FROM conv CROSS JOIN LATERAL (
                 SELECT u.cost_usd FROM {_USAGE} u WHERE u.tenant_id = %(tenant)s
                 AND u.conversation_id = conv.id) x),
  'days', {_DAYS},
  'reasons', {_REASONS},
  'questions', {_QUESTIONS}
)"""  # noqa: S608
