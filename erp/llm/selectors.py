"""Reads on the usage ledger: totals per day, agent or model for one tenant, and what each
conversation cost (`conversation_costs`)."""

from __future__ import annotations

import datetime as dt
import uuid
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate

from erp.llm.models import COST_GROUPS, UsageLog
from erp.tenancy.models import Tenant

GroupBy = Literal["day", "agent", "model"]
GROUP_BY_CHOICES: tuple[GroupBy, ...] = ("day", "agent", "model")


@dataclass(frozen=True)
class UsageTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: Decimal = Decimal("0")
    calls: int = 0
    errors: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": f"{self.cost_usd:.6f}",
            "calls": self.calls,
            "errors": self.errors,
        }


@dataclass(frozen=True)
class UsageGroup:
    key: str | None
    totals: UsageTotals
    provider: str | None = None  # set when grouping by model


@dataclass(frozen=True)
class UsageSummary:
    groups: list[UsageGroup]
    totals: UsageTotals


_AGGREGATES = {
    "input_tokens": Sum("input_tokens"),
    "output_tokens": Sum("output_tokens"),
    "total_tokens": Sum("total_tokens"),
    "cost_usd": Sum("cost_usd"),
    "calls": Count("id"),
    "errors": Count("id", filter=Q(success=False)),
}


def _totals(row: dict[str, Any]) -> UsageTotals:
    return UsageTotals(
        input_tokens=row["input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        total_tokens=row["total_tokens"] or 0,
        cost_usd=row["cost_usd"] or Decimal("0"),
        calls=row["calls"],
        errors=row["errors"],
    )


def usage_summary(
    *, tenant: Tenant, date_from: dt.date, date_to: dt.date, group_by: GroupBy
) -> UsageSummary:
    """Totals for the tenant's calendar days `date_from`..`date_to` (inclusive, its timezone)."""
    tz = zoneinfo.ZoneInfo(tenant.timezone)
    start = dt.datetime.combine(date_from, dt.time.min, tzinfo=tz)
    end = dt.datetime.combine(date_to + dt.timedelta(days=1), dt.time.min, tzinfo=tz)
    rows = UsageLog.objects.for_tenant(tenant).filter(created_at__gte=start, created_at__lt=end)

    groups: list[UsageGroup]
    if group_by == "day":
        per_day = (
            rows.annotate(day=TruncDate("created_at", tzinfo=tz))
            .values("day")
            .annotate(**_AGGREGATES)
            .order_by("day")
        )
        groups = [UsageGroup(key=r["day"].isoformat(), totals=_totals(r)) for r in per_day]
    elif group_by == "agent":
        per_agent = rows.values("agent_id").annotate(**_AGGREGATES).order_by()
        groups = [
            UsageGroup(key=str(r["agent_id"]) if r["agent_id"] else None, totals=_totals(r))
            for r in per_agent
        ]
        groups.sort(key=_by_cost)
    else:
        per_model = rows.values("provider", "model").annotate(**_AGGREGATES).order_by()
        groups = [
            UsageGroup(key=r["model"], provider=r["provider"], totals=_totals(r)) for r in per_model
        ]
        groups.sort(key=_by_cost)
    overall = rows.aggregate(**_AGGREGATES)
    return UsageSummary(groups=groups, totals=_totals(overall))


def _by_cost(group: UsageGroup) -> tuple[Decimal, int, str]:
    return (-group.totals.cost_usd, -group.totals.total_tokens, group.key or "")


@dataclass(frozen=True)
class ConversationCost:
    """What a conversation cost, by `COST_GROUPS` (erp/llm/models.py): "model" (llm_request,
    embedding, tool_execution), "transcription", "channel" (channel_message)."""

    model_usd: Decimal = Decimal("0")
    transcription_usd: Decimal = Decimal("0")
    channel_usd: Decimal = Decimal("0")

    @property
    def total_usd(self) -> Decimal:
        return self.model_usd + self.transcription_usd + self.channel_usd

    def as_dict(self) -> dict[str, str]:
        return {
            "model_usd": f"{self.model_usd:.6f}",
            "transcription_usd": f"{self.transcription_usd:.6f}",
            "channel_usd": f"{self.channel_usd:.6f}",
            "total_usd": f"{self.total_usd:.6f}",
        }


def conversation_costs(
    *, tenant_id: int, conversation_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, ConversationCost]:
    """Each conversation's cost from its ledger rows (one query; a conversation without rows
    costs 0). Sum `total_usd` for a conversation's `cost_usd`."""
    ids = list(conversation_ids)
    sums: dict[uuid.UUID, dict[str, Decimal]] = {i: {} for i in ids}
    per_operation = (
        UsageLog.objects.for_tenant(tenant_id)
        .filter(conversation_id__in=ids)
        .values("conversation_id", "operation")
        .annotate(cost=Sum("cost_usd"))
        .order_by()
    )
    for row in per_operation:
        group = COST_GROUPS.get(row["operation"], "model")
        parts = sums[row["conversation_id"]]
        parts[group] = parts.get(group, Decimal("0")) + (row["cost"] or Decimal("0"))
    return {
        conversation_id: ConversationCost(
            model_usd=parts.get("model", Decimal("0")),
            transcription_usd=parts.get("transcription", Decimal("0")),
            channel_usd=parts.get("channel", Decimal("0")),
        )
        for conversation_id, parts in sums.items()
    }
