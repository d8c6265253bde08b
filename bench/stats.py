"""Statistics at scale: `GET /api/v1/stats` for a tenant with 1,000,000 messages.

    .venv/bin/python bench/stats.py [--messages 1000000] [--conversations 50000]
                                    [--runs 20] [--smoke] [--explain]

Creates a scratch database (bench/_harness.py), loads tenant A (contacts and conversations by
the inbox-search bench's builder, `inbox_search._load_tenant`) and a smaller tenant B, then
fills them with SQL `generate_series` inserts: conversations spread over the year 2026 (status,
escalations with their reasons, CSAT, staff claims, 5 % followed by another one), `messages`
split evenly over them (customer and bot turns, 3 % of the bot's replies `no_answer` after a
question drawn from near-duplicate wordings, staff replies in escalated ones) and one usage
row per bot reply; the conversations' statistics facts are then filled in by migration
0024's backfill (`conversation_facts_backfill`, timed) and their cost, summed from the usage
rows, by migration 0026's (`conversation_cost_backfill`, timed). VACUUM ANALYZE; then, as the
application's role (row-level security on) and scoped to tenant A, times over `--runs` runs
each: the statistics statement (`stats_read`) for the last 30 days, for the last 30 days of
one agent and for the whole year (366 days); the API call (`GET /api/v1/stats`, API key, the
whole Django stack in process) for the same three periods; and `GET /api/v1/tenant` beside
them (what any API request costs here). Prints P50/P95 per case (goal: P95 < 300 ms) and the
machine's load average.
`--smoke`: a tiny size, seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# inbox_search sets Django up when imported (settings module, django.setup()).
from _harness import assert_scratch, connect_as_app_role, percentile, scratch_database
from django.db import connection
from inbox_search import _load_tenant

YEAR_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
QUESTIONS = [
    "¿Hacen envíos a Canarias?",
    "hacen envios a canarias",
    "¿Envían a Canarias?",
    "¿Cuál es el horario del sábado?",
    "horario del sabado",
    "¿Aceptan pagos con PayPal?",
    "¿Puedo pagar con paypal?",
    "¿Tienen tienda física en Bilbao?",
]
REASONS = ["user_request", "low_confidence", "negative_sentiment", "conversation_loop"]

_CONVERSATIONS = """
UPDATE ai_agents_conversation c SET
  started_at = %(start)s + (random() * 365) * interval '1 day',
  status = (ARRAY['closed', 'closed', 'expired', 'expired', 'active', 'escalated'])[1 + floor(random() * 6)],
  satisfaction_rating = CASE WHEN random() < 0.2 THEN 1 + floor(random() * 5) END
WHERE c.tenant_id = %(tenant)s
"""  # noqa: E501
_ENDS = """
UPDATE ai_agents_conversation c SET
  closed_at = CASE WHEN status IN ('closed', 'expired') THEN started_at + interval '1 hour' END,
  escalated_at = CASE WHEN status = 'escalated' OR random() < 0.08
                      THEN started_at + interval '2 minutes' END,
  last_message_at = started_at + interval '20 minutes'
WHERE c.tenant_id = %(tenant)s
"""
_ESCALATIONS = """
UPDATE ai_agents_conversation c SET
  escalation_reason = (%(reasons)s::text[])[1 + floor(random() * %(n_reasons)s)],
  escalated_to_id = %(staff)s
WHERE c.tenant_id = %(tenant)s AND escalated_at IS NOT NULL
"""
_FOLLOWERS = """
UPDATE ai_agents_conversation c SET previous_conversation_id = p.id
FROM (SELECT id, lead(id) OVER (ORDER BY started_at) AS next_id FROM ai_agents_conversation
      WHERE tenant_id = %(tenant)s) p
WHERE c.id = p.next_id AND random() < 0.05
"""
_MESSAGES = """
INSERT INTO ai_agents_message (id, tenant_id, conversation_id, agent_id, role, content,
                               metadata, delivery_status, created_at, author_id)
SELECT gen_random_uuid(), c.tenant_id, c.id, c.agent_id,
       CASE WHEN g %% 2 = 0 THEN 'user' ELSE 'assistant' END,
       CASE WHEN g %% 2 = 0 THEN (%(questions)s::text[])[1 + (abs(hashtext(c.id::text || g)) %% %(n_q)s)]
            ELSE 'Respuesta ' || g END,
       CASE WHEN g %% 2 = 1 AND abs(hashtext(c.id::text || g || 'x')) %% 100 < 3
            THEN '{"outcome": "no_answer"}'::jsonb ELSE '{}'::jsonb END,
       CASE WHEN g %% 2 = 1 THEN 'sent' ELSE '' END,
       c.started_at + g * interval '45 seconds' + (g %% 2) * interval '2 seconds',
       CASE WHEN g %% 2 = 1 AND g > 6 AND c.escalated_at IS NOT NULL THEN %(staff)s END
FROM ai_agents_conversation c CROSS JOIN generate_series(0, %(per)s - 1) g
WHERE c.tenant_id = %(tenant)s
"""  # noqa: E501
_USAGE = """
INSERT INTO {usage} (id, tenant_id, agent_id, conversation_id, message_id, operation,
                        provider, model, input_tokens, output_tokens, total_tokens, cost_usd,
                        success, error_message, created_at)
SELECT gen_random_uuid(), m.tenant_id, m.agent_id, m.conversation_id, m.id, 'llm_request',
       'google', 'gemini', 900, 120, 1020, 0.000250, true, '', m.created_at
FROM ai_agents_message m WHERE m.tenant_id = %(tenant)s AND m.role = 'assistant'
"""


def _fill(loaded: dict[str, Any], *, messages: int, staff_id: int) -> None:
    """Conversations' facts, messages and usage rows of one tenant, in SQL (as the owner)."""
    from erp.llm.models import UsageLog

    usage = _USAGE.format(usage=UsageLog._meta.db_table)
    tenant_id = loaded["tenant"].pk
    per = max(2, messages // len(loaded["conversations"]))
    params = {
        "tenant": tenant_id,
        "start": YEAR_START,
        "staff": staff_id,
        "reasons": REASONS,
        "n_reasons": len(REASONS),
        "questions": QUESTIONS,
        "n_q": len(QUESTIONS),
        "per": per,
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.17)")
        for statement in (_CONVERSATIONS, _ENDS, _ESCALATIONS, _FOLLOWERS, _MESSAGES, usage):
            cursor.execute(statement, params)
        cursor.execute(
            "UPDATE ai_agents_conversation SET message_count = %s WHERE tenant_id = %s",
            [per, tenant_id],
        )


def _timed(call: Callable[[], Any], runs: int) -> list[float]:
    call()  # warm-up
    values = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        values.append((time.perf_counter() - t0) * 1000)
    return values


def _report(name: str, values: list[float]) -> None:
    print(
        f"{name:>38}: P50 {statistics.median(values):6.1f} ms, "
        f"P95 {percentile(values, 0.95):6.1f} ms over {len(values)} runs"
    )


def _cases(loaded: dict[str, Any], key: str) -> dict[str, Callable[[], Any]]:
    from rest_framework.test import APIClient

    from ai_agents.selectors.stats import StatsPeriod, stats_read

    tenant = loaded["tenant"]
    zone = zoneinfo.ZoneInfo(tenant.timezone or "UTC")
    last = dt.date(2026, 12, 31)
    month = StatsPeriod(tenant.pk, zone, last - dt.timedelta(days=29), last)
    agent = StatsPeriod(tenant.pk, zone, month.date_from, last, agent_id=str(loaded["agent"].pk))
    year = StatsPeriod(tenant.pk, zone, dt.date(2026, 1, 1), last)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    def api(period: StatsPeriod) -> Callable[[], None]:
        query = {"from": period.date_from.isoformat(), "to": last.isoformat()}
        if period.agent_id is not None:
            query["agent"] = period.agent_id

        def call() -> None:
            response = client.get("/api/v1/stats", query)
            assert response.status_code == 200, response.content[:300]

        return call

    def bare() -> None:  # the request's own cost (authentication, middleware, connection)
        assert client.get("/api/v1/tenant").status_code == 200

    return {
        "stats_read, 30 days": lambda: stats_read(period=month),
        "stats_read, 30 days, one agent": lambda: stats_read(period=agent),
        "stats_read, 366 days": lambda: stats_read(period=year),
        "GET /api/v1/stats, 30 days": api(month),
        "GET /api/v1/stats, 30 days, one agent": api(agent),
        "GET /api/v1/stats, 366 days": api(year),
        "GET /api/v1/tenant (no statistics)": bare,
    }


def run(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model

    from ai_agents.selectors.stats import StatsPeriod, stats_read
    from ai_agents.services.stats_facts import (
        conversation_cost_backfill,
        conversation_facts_backfill,
    )
    from erp.tenancy.scoping import tenant_scope
    from erp.tenancy.services import apikey_create

    rng = random.Random(17)
    assert_scratch()
    started = time.perf_counter()
    staff = get_user_model().objects.create(username="staff@bench.test", is_staff=True)
    loaded = _load_tenant("bench-a", args.conversations, rng)
    _fill(loaded, messages=args.messages, staff_id=staff.pk)
    other = _load_tenant("bench-b", max(2, args.conversations // 10), rng)
    _fill(other, messages=args.messages // 10, staff_id=staff.pk)
    key = apikey_create(tenant=loaded["tenant"], name="bench").key
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        t0 = time.perf_counter()
        filled = conversation_facts_backfill(cursor=cursor)  # what migration 0024 runs
        backfill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        conversation_cost_backfill(cursor=cursor)  # what migration 0026 runs
        cost_s = time.perf_counter() - t0
        cursor.execute("VACUUM ANALYZE")
        cursor.execute(
            "SELECT count(*) FROM ai_agents_message WHERE tenant_id = %s", [loaded["tenant"].pk]
        )
        (count,) = cursor.fetchone()
    print(f"tenant A: {count} messages over {args.conversations} conversations (tenant B: a tenth)")
    print(f"loaded in {time.perf_counter() - started:.1f} s")
    print(f"facts backfilled (migration 0024) for {filled} conversations in {backfill_s:.1f} s")
    print(f"costs backfilled (migration 0026) for {filled} conversations in {cost_s:.1f} s")
    connect_as_app_role()
    cases = _cases(loaded, key)
    with tenant_scope(loaded["tenant"]):
        if args.explain:
            _explain(loaded, StatsPeriod)
        for name, call in cases.items():
            _report(name, _timed(call, args.runs))
        month = stats_read(period=_month(loaded, StatsPeriod))
    print(
        f"30 days: {month.conversations} conversations, {month.messages} messages, "
        f"{month.resolved_by_ai} resolved by the AI, {len(month.unanswered)} question groups"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"goal: P95 < 300 ms; load average during the run: {load} ({os.cpu_count()} cores)")


def _month(loaded: dict[str, Any], period_class: Any) -> Any:
    zone = zoneinfo.ZoneInfo(loaded["tenant"].timezone or "UTC")
    last = dt.date(2026, 12, 31)
    return period_class(loaded["tenant"].pk, zone, last - dt.timedelta(days=29), last)


def _explain(loaded: dict[str, Any], period_class: Any) -> None:
    from ai_agents.selectors.stats_sql import stats_statement

    month = _month(loaded, period_class)
    period = period_class(month.tenant_id, month.zone, dt.date(2026, 1, 1), month.date_to)
    params = {"tenant": period.tenant_id, "start": period.start, "end": period.end}
    params |= {"tz": period.zone.key, "agent": None, "channel": None}
    with connection.cursor() as cursor:
        sql = stats_statement(agent=False, channel=False)
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        print("\n".join(row[0] for row in cursor.fetchall()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000, help="of tenant A")
    parser.add_argument("--conversations", type=int, default=50_000, help="of tenant A")
    parser.add_argument("--runs", type=int, default=20, help="per case")
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    parser.add_argument("--explain", action="store_true", help="print the 366-day plan")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.conversations, args.runs = 2_000, 100, 3
    with scratch_database("bench_stats"):
        run(args)


if __name__ == "__main__":
    main()
