"""What the statistics page shows: the figures as readable cards, the charts' data (drawn by
the vendored Chart.js from a JSON script tag), the unanswered questions with their "add to the
knowledge base" link (the admin's text-document form, prefilled through its query string), the
filter choices and the CSV links."""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from rest_framework.exceptions import ValidationError

from ai_agents.models import Agent
from ai_agents.rules.inbox_labels import CHANNEL_LABELS
from ai_agents.selectors.stats import Percentiles, Stats
from erp.tenancy.models import Tenant
from erp.tenancy.selectors import user_memberships

FILTER_KEYS = ("from", "to", "agent", "channel")
NONE = "—"


def error_text(error: ValidationError) -> str:
    """The first message of a validation error, for a person."""
    detail: Any = error.detail
    while isinstance(detail, dict | list) and detail:
        detail = next(iter(detail.values())) if isinstance(detail, dict) else detail[0]
    return str(detail)


def _one_decimal(value: float) -> str:
    return number_format(round(value, 1), 1)  # number_format cuts, it does not round


def duration_text(ms: int | None) -> str:
    if ms is None:
        return NONE
    seconds = ms / 1000
    if seconds < 60:
        return _("%(n)s s") % {"n": _one_decimal(seconds)}
    if seconds < 3600:
        return _("%(n)s min") % {"n": _one_decimal(seconds / 60)}
    return _("%(n)s h") % {"n": _one_decimal(seconds / 3600)}


def money_text(value: Decimal | None) -> str:
    if value is None:
        return NONE
    return _("%(n)s USD") % {"n": number_format(value.quantize(Decimal("0.0001")), 4)}


def _first_response(who: Percentiles) -> str:
    return _("mediana %(p50)s · p90 %(p90)s") % {
        "p50": duration_text(who.p50),
        "p90": duration_text(who.p90),
    }


def _cards(stats: Stats) -> list[dict[str, str]]:
    rate = stats.ai_resolution_rate
    csat = stats.csat_average
    return [
        {"id": "conversations", "label": _("Conversaciones"), "value": str(stats.conversations)},
        {"id": "messages", "label": _("Mensajes"), "value": str(stats.messages)},
        {
            "id": "resolved",
            "label": _("Resueltas por la IA"),
            "value": str(stats.resolved_by_ai),
            "detail": NONE if rate is None else f"{_one_decimal(rate * 100)} %",
        },
        {"id": "escalated", "label": _("Pasadas a una persona"), "value": str(stats.escalated)},
        {
            "id": "bot-first",
            "label": _("Primera respuesta del bot"),
            "value": _first_response(stats.bot_first_response),
        },
        {
            "id": "people-first",
            "label": _("Primera respuesta de una persona"),
            "value": _first_response(stats.people_first_response),
        },
        {
            "id": "csat",
            "label": _("Satisfacción (1 a 5)"),
            "value": NONE if csat is None else number_format(csat, 2),
            "detail": _("%(n)s respuestas") % {"n": stats.csat_responses},
        },
        {"id": "cost", "label": _("Costo de IA"), "value": money_text(stats.cost_usd)},
        {
            "id": "cost-conversation",
            "label": _("Costo por conversación"),
            "value": money_text(stats.cost_per_conversation),
        },
        {
            "id": "cost-resolved",
            "label": _("Costo por conversación resuelta"),
            "value": money_text(stats.cost_per_resolved),
        },
    ]


def _charts(stats: Stats) -> dict[str, Any]:
    bot, people = stats.bot_first_response, stats.people_first_response

    def seconds(ms: int | None) -> float | None:
        return None if ms is None else round(ms / 1000, 1)

    return {
        "days": [d["day"] for d in stats.days],
        "conversations": [d["conversations"] for d in stats.days],
        "escalated": [d["escalated"] for d in stats.days],
        "resolved": [d["resolved_by_ai"] for d in stats.days],
        "reasons": [r["label"] or _("Sin motivo") for r in stats.escalations_by_reason],
        "reason_counts": [r["count"] for r in stats.escalations_by_reason],
        "who": [_("Bot"), _("Personas")],
        "p50": [seconds(bot.p50), seconds(people.p50)],
        "p90": [seconds(bot.p90), seconds(people.p90)],
        "texts": {
            "conversations": _("Conversaciones"),
            "escalated": _("Pasadas a una persona"),
            "resolved": _("Resueltas por la IA"),
            "p50": _("Mediana (s)"),
            "p90": _("Percentil 90 (s)"),
        },
    }


def _unanswered(stats: Stats) -> list[dict[str, Any]]:
    add = reverse("admin:ai_agents_document_add")
    rows = []
    for group in stats.unanswered:
        prefill = {"title": group.question[:300], "text": _("Pregunta: %(q)s\n\nRespuesta: ")}
        prefill["text"] = prefill["text"] % {"q": group.question}
        rows.append({**vars(group), "add_url": f"{add}?{urlencode(prefill)}"})
    return rows


def page_context(request: HttpRequest, *, tenant: Tenant, stats: Stats | None) -> dict[str, Any]:
    values = {k: request.GET.get(k, "").strip() for k in FILTER_KEYS}
    user: Any = request.user  # signed in (staff_member_required)
    tenants = [m.tenant for m in user_memberships(user).select_related("tenant")]
    context: dict[str, Any] = {
        "tenant": tenant,
        "tenants": tenants if len(tenants) > 1 else [],
        "values": values,
        "agents": list(Agent.objects.for_tenant(tenant).order_by("name", "pk")),
        "channels": [(code, str(label)) for code, label in CHANNEL_LABELS.items()],
    }
    if stats is None:
        return context
    period = stats.period
    query = {"tenant": tenant.slug, "from": period.date_from.isoformat()}
    query |= {"to": period.date_to.isoformat()}
    query |= {k: v for k, v in (("agent", period.agent_id), ("channel", period.channel)) if v}
    return {
        **context,
        "stats": stats,
        "cards": _cards(stats),
        "charts": _charts(stats),
        "unanswered": _unanswered(stats),
        "query": urlencode(query),
        "shown_from": period.date_from.isoformat(),
        "shown_to": period.date_to.isoformat(),
    }
