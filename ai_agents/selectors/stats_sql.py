"""The statistics statement: one round trip, computed in PostgreSQL over indexed columns.

The period's conversations (`started_at` in the tenant's calendar days) are read once
(`conv`) from the covering index `conv_tenant_started`, with the facts each conversation keeps
(services/stats_facts.py: its customer and assistant messages, the bot's and the people's first
response, whether a person wrote, its no-answer replies, its cost), written with its messages by
the pipeline and the handoff, the cost by the usage ledger's own statement
(erp/llm/conversation_cost.py). Only one thing is looked up elsewhere: whether a new
conversation of the thread followed one within 72 hours (`conv_previous`, one hashed join). The
no-answer replies of the conversations that have some come from `msg_no_answer`, each with the
customer message just before it. Every figure is an aggregate of `conv`, built into one JSON
object.

Definitions (README "Statistics"):
- resolved by the AI: closed or expired, never escalated, never claimed or assigned, no staff
  message, and no conversation of the same thread started within 72 h of its end;
- first response: bot = first bot reply after the first customer message; people = first staff
  message after the escalation;
- messages: customer and assistant messages (bot and staff) of the period's conversations;
- cost: the usage ledger rows of the period's conversations (kept summed on each one).
"""

from __future__ import annotations

from ai_agents.models import Conversation, Message

REOPEN_HOURS = 72
QUESTIONS_MAX = 5000  # the latest no-answer replies read per request (grouped in Python)
QUESTION_CHARS = 300

_CONV = Conversation._meta.db_table
_MSG = Message._meta.db_table


def _percentiles(column: str, where: str = "true") -> str:
    """p50, p90 and count of `column` over the conversations (NULLs are ignored by the aggregates);
    column names of this module, never input."""
    ordered, only = f"WITHIN GROUP (ORDER BY {column})", f"FILTER (WHERE {where})"
    return (
        "json_build_object("
        f"'p50', round(percentile_cont(0.5) {ordered} {only}), "
        f"'p90', round(percentile_cont(0.9) {ordered} {only}), "
        f"'count', count({column}) {only})"
    )


# Candidates for "resolved by the AI" (all but the 72-hour rule).
_CANDIDATE = """(c.status IN ('closed', 'expired') AND c.escalated_at IS NULL
     AND c.assigned_to_id IS NULL AND c.escalated_to_id IS NULL AND c.claimed_at IS NULL
     AND NOT c.staff_involved)"""

# The 72-hour rule: the first conversation of the thread started after each one (since the
# period's start), one hashed join over the partial index conv_previous (a few per cent of the
# conversations), not a probe per conversation.
_FOLLOWERS = f"""LEFT JOIN (
    SELECT previous_conversation_id AS id, min(started_at) AS first_at FROM {_CONV}
    WHERE tenant_id = %(tenant)s AND previous_conversation_id IS NOT NULL
      AND started_at >= %(start)s
    GROUP BY 1
  ) n ON n.id = c.id"""  # noqa: S608
_RESOLVED = f"""({_CANDIDATE} AND (n.first_at IS NULL
     OR n.first_at >= coalesce(c.closed_at, c.started_at) + interval '{REOPEN_HOURS} hours'))"""

# What the figures read of each conversation, kept narrow (a year is 50,000 rows held in
# memory): its day in the tenant's zone, the reason only when escalated, the id only when it
# has no-answer replies (the questions read those alone).
_CONV_COLUMNS = """(c.started_at AT TIME ZONE %(tz)s)::date AS day,
         c.escalated_at IS NOT NULL AS escalated,
         CASE WHEN c.escalated_at IS NOT NULL THEN c.escalation_reason END AS escalation_reason,
         c.satisfaction_rating, c.customer_messages + c.assistant_messages AS messages,
         c.first_bot_response_ms, c.first_human_response_ms, c.cost_usd,
         CASE WHEN c.no_answer_replies > 0 THEN c.id END AS no_answer_id"""

# Every single-number figure in one pass over the conversations.
_TOTALS = f"""
totals AS (
  SELECT count(*) AS conversations,
         count(*) FILTER (WHERE resolved) AS resolved_by_ai,
         count(*) FILTER (WHERE escalated) AS escalated,
         round(avg(satisfaction_rating), 2)::text AS csat_average,
         count(satisfaction_rating) AS csat_responses,
         coalesce(sum(messages), 0) AS messages,
         coalesce(sum(cost_usd), 0)::text AS cost_usd,
         {_percentiles("first_bot_response_ms")} AS bot,
         {_percentiles("first_human_response_ms", "escalated")} AS people
  FROM conv
)"""  # noqa: S608

# Grouped by date, formatted once per day (not once per conversation).
_DAYS = """(SELECT coalesce(json_agg(d ORDER BY d.day), '[]') FROM (
  SELECT to_char(g.day, 'YYYY-MM-DD') AS day, g.conversations, g.escalated, g.resolved_by_ai
  FROM (SELECT day,
               count(*) AS conversations,
               count(*) FILTER (WHERE escalated) AS escalated,
               count(*) FILTER (WHERE resolved) AS resolved_by_ai
        FROM conv GROUP BY 1) g) d)"""

_REASONS = """(SELECT coalesce(json_agg(r ORDER BY r.count DESC, r.reason), '[]') FROM (
  SELECT escalation_reason AS reason, count(*) AS count
  FROM conv WHERE escalated GROUP BY 1) r)"""

# The partial index msg_no_answer is on exactly this expression.
NO_ANSWER_CONDITION = "(a.metadata -> 'outcome') = '\"no_answer\"'::jsonb"

# The latest no-answer replies of the conversations that have some (their count is a fact),
# then, for those only, the customer message just before each (strictly before: the index
# scan then starts past the reply's own row); identical texts counted here
# ([text, times asked], in the order first asked: `questions_group_counted`).
_QUESTIONS = f"""(SELECT coalesce(json_agg(json_build_array(q.text, q.times) ORDER BY q.at), '[]')
  FROM (
  SELECT left(q.content, {QUESTION_CHARS}) AS text, count(*) AS times, min(a.at) AS at
  FROM (
    SELECT a.conversation_id, a.created_at AS at
    FROM (SELECT no_answer_id AS id FROM conv WHERE no_answer_id IS NOT NULL) conv
    JOIN {_MSG} a ON a.tenant_id = %(tenant)s AND a.conversation_id = conv.id
         AND {NO_ANSWER_CONDITION}
    ORDER BY a.created_at DESC LIMIT {QUESTIONS_MAX}
  ) a
  CROSS JOIN LATERAL (
    SELECT m.content FROM {_MSG} m WHERE m.tenant_id = %(tenant)s
    AND m.conversation_id = a.conversation_id AND m.role = 'user' AND m.created_at < a.at
    ORDER BY m.created_at DESC LIMIT 1
  ) q
  GROUP BY 1) q)"""  # noqa: S608


def stats_statement(*, agent: bool, channel: bool) -> str:
    """The statement for the filters in use (parameters: tenant, start, end, tz, agent,
    channel)."""
    filters = " AND c.agent_id = %(agent)s" if agent else ""
    filters += " AND c.channel = %(channel)s" if channel else ""
    return f"""
WITH conv AS MATERIALIZED (
  SELECT {_CONV_COLUMNS}, {_RESOLVED} AS resolved
  FROM {_CONV} c {_FOLLOWERS}
  WHERE c.tenant_id = %(tenant)s AND c.started_at >= %(start)s AND c.started_at < %(end)s
  {filters}
), {_TOTALS}
SELECT json_build_object(
  'conversations', t.conversations,
  'resolved_by_ai', t.resolved_by_ai,
  'escalated', t.escalated,
  'csat_average', t.csat_average,
  'csat_responses', t.csat_responses,
  'bot', t.bot,
  'people', t.people,
  'messages', t.messages,
  'cost_usd', t.cost_usd,
  'days', {_DAYS},
  'reasons', {_REASONS},
  'questions', {_QUESTIONS}
) FROM totals t"""  # noqa: S608
