"""Statistics of one tenant over a period of its calendar days (issue #17).

`stats_read` runs the one statement of `stats_sql.py` and shapes its JSON into `Stats`;
`stats_rows` and `conversation_rows` are the two CSV exports (the figures, and one line per
conversation of the period). The API (`/api/v1/stats`) and the staff page (`/stats/`) call
these; neither computes anything itself.
"""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection

from ai_agents.models import Conversation
from ai_agents.rules.escalation_labels import REASON_LABELS
from ai_agents.selectors.stats_questions import QuestionGroup, questions_group_counted
from ai_agents.selectors.stats_sql import stats_statement


@dataclass(frozen=True)
class StatsPeriod:
    tenant_id: int
    zone: zoneinfo.ZoneInfo
    date_from: dt.date
    date_to: dt.date  # inclusive
    agent_id: str | None = None
    channel: str | None = None

    @property
    def start(self) -> dt.datetime:
        return dt.datetime.combine(self.date_from, dt.time.min, tzinfo=self.zone)

    @property
    def end(self) -> dt.datetime:
        return dt.datetime.combine(self.date_to + dt.timedelta(days=1), dt.time.min, self.zone)


@dataclass(frozen=True)
class Percentiles:
    p50: int | None
    p90: int | None
    count: int


@dataclass(frozen=True)
class Stats:
    period: StatsPeriod
    conversations: int
    messages: int
    resolved_by_ai: int
    escalated: int
    escalations_by_reason: list[dict[str, Any]]
    bot_first_response: Percentiles
    people_first_response: Percentiles
    csat_average: Decimal | None
    csat_responses: int
    cost_usd: Decimal
    days: list[dict[str, Any]]
    unanswered: list[QuestionGroup]

    @property
    def ai_resolution_rate(self) -> float | None:
        return round(self.resolved_by_ai / self.conversations, 4) if self.conversations else None

    @property
    def cost_per_conversation(self) -> Decimal | None:
        return _per(self.cost_usd, self.conversations)

    @property
    def cost_per_resolved(self) -> Decimal | None:
        return _per(self.cost_usd, self.resolved_by_ai)


def _per(cost: Decimal, count: int) -> Decimal | None:
    return (cost / count).quantize(Decimal("0.000001")) if count else None


def _percentiles(raw: dict[str, Any]) -> Percentiles:
    def whole(value: Any) -> int | None:
        return None if value is None else int(value)

    return Percentiles(p50=whole(raw["p50"]), p90=whole(raw["p90"]), count=raw["count"])


def _every_day(period: StatsPeriod, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per calendar day of the period (days without conversations at zero)."""
    found = {row["day"]: row for row in rows}
    days = []
    day = period.date_from
    while day <= period.date_to:
        key = day.isoformat()
        empty = {"day": key, "conversations": 0, "escalated": 0, "resolved_by_ai": 0}
        days.append(found.get(key, empty))
        day += dt.timedelta(days=1)
    return days


def stats_read(*, period: StatsPeriod) -> Stats:
    """The period's figures (one statement; see stats_sql.py for the definitions)."""
    sql = stats_statement(agent=period.agent_id is not None, channel=period.channel is not None)
    params: dict[str, Any] = {
        "tenant": period.tenant_id,
        "start": period.start,
        "end": period.end,
        "tz": period.zone.key,
        "agent": period.agent_id,
        "channel": period.channel,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (raw,) = cursor.fetchone()
    data = raw if isinstance(raw, dict) else json.loads(raw)
    reasons = [
        {"reason": r["reason"], "label": str(REASON_LABELS.get(r["reason"], r["reason"])), **r}
        for r in data["reasons"]
    ]
    average = data["csat_average"]
    return Stats(
        period=period,
        conversations=data["conversations"],
        messages=data["messages"],
        resolved_by_ai=data["resolved_by_ai"],
        escalated=data["escalated"],
        escalations_by_reason=reasons,
        bot_first_response=_percentiles(data["bot"]),
        people_first_response=_percentiles(data["people"]),
        csat_average=Decimal(average) if average is not None else None,
        csat_responses=data["csat_responses"],
        cost_usd=Decimal(data["cost_usd"]),
        days=_every_day(period, data["days"]),
        unanswered=questions_group_counted(data["questions"]),
    )


def _money(value: Decimal | None) -> str | None:
    return None if value is None else f"{value:.6f}"


def stats_body(stats: Stats) -> dict[str, Any]:
    """The API's JSON body (`GET /api/v1/stats`)."""
    period = stats.period
    return {
        "from": period.date_from.isoformat(),
        "to": period.date_to.isoformat(),
        "timezone": period.zone.key,
        "agent": period.agent_id,
        "channel": period.channel,
        "conversations": stats.conversations,
        "messages": stats.messages,
        "resolved_by_ai": stats.resolved_by_ai,
        "ai_resolution_rate": stats.ai_resolution_rate,
        "escalated": stats.escalated,
        "escalations_by_reason": stats.escalations_by_reason,
        "first_response_ms": {
            "bot": vars(stats.bot_first_response),
            "people": vars(stats.people_first_response),
        },
        "csat": {
            "average": None if stats.csat_average is None else float(stats.csat_average),
            "responses": stats.csat_responses,
        },
        "cost_usd": _money(stats.cost_usd),
        "cost_per_conversation_usd": _money(stats.cost_per_conversation),
        "cost_per_resolved_usd": _money(stats.cost_per_resolved),
        "per_day": stats.days,
        "unanswered_questions": [
            {"question": g.question, "count": g.count, "examples": g.examples}
            for g in stats.unanswered
        ],
    }


def stats_rows(stats: Stats) -> Iterator[list[Any]]:
    """The statistics CSV: one `metric,value` line per figure, then one line per day."""
    body = stats_body(stats)
    yield ["metric", "value"]
    for key in ("from", "to", "timezone", "agent", "channel", "conversations", "messages"):
        yield [key, body[key]]
    for key in ("resolved_by_ai", "ai_resolution_rate", "escalated"):
        yield [key, body[key]]
    for who in ("bot", "people"):
        for q in ("p50", "p90"):
            yield [f"first_response_ms_{who}_{q}", body["first_response_ms"][who][q]]
    yield ["csat_average", body["csat"]["average"]]
    yield ["csat_responses", body["csat"]["responses"]]
    for key in ("cost_usd", "cost_per_conversation_usd", "cost_per_resolved_usd"):
        yield [key, body[key]]
    for row in stats.escalations_by_reason:
        yield [f"escalated_{row['reason'] or 'unknown'}", row["count"]]
    for group in stats.unanswered:
        yield ["unanswered_question", group.question, group.count]
    yield []
    yield ["day", "conversations", "escalated", "resolved_by_ai"]
    for day in stats.days:
        yield [day["day"], day["conversations"], day["escalated"], day["resolved_by_ai"]]


# Conversations read per round trip of the export's server-side cursor.
CSV_CHUNK_ROWS = 2000
CONVERSATION_COLUMNS = (
    "id",
    "started_at",
    "closed_at",
    "status",
    "channel",
    "agent",
    "contact",
    "messages",
    "escalated_at",
    "escalation_reason",
    "satisfaction_rating",
    "previous_conversation",
)


def conversation_rows(*, period: StatsPeriod) -> Iterator[list[Any]]:
    """The conversations CSV: one line per conversation started in the period (oldest first),
    times in the tenant's zone. Streams (a year of conversations is not held in memory)."""
    rows = Conversation.objects.for_tenant(period.tenant_id).filter(
        started_at__gte=period.start, started_at__lt=period.end
    )
    if period.agent_id is not None:
        rows = rows.filter(agent_id=period.agent_id)
    if period.channel is not None:
        rows = rows.filter(channel=period.channel)
    values = rows.order_by("started_at", "id").values_list(
        "id",
        "started_at",
        "closed_at",
        "status",
        "channel",
        "agent__name",
        "contact_identifier",
        "message_count",
        "escalated_at",
        "escalation_reason",
        "satisfaction_rating",
        "previous_conversation_id",
    )
    yield list(CONVERSATION_COLUMNS)
    for row in values.iterator(chunk_size=CSV_CHUNK_ROWS):
        yield [_cell(value, period.zone) for value in row]


def _cell(value: Any, zone: zoneinfo.ZoneInfo) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(zone).isoformat(timespec="seconds")
    return "" if value is None else value
