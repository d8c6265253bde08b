"""`GET /api/v1/stats?from=&to=&agent=&channel=`: the tenant's statistics for a period of its
calendar days (JSON; `?format=csv` the same figures as CSV), and `GET /api/v1/stats/
conversations.csv` the period's conversations. 400 `validation_error` for a bad date, `from`
after `to`, a period over 366 days, an unknown agent or channel. The figures are defined in
ai_agents/selectors/stats_sql.py (and the README)."""

from __future__ import annotations

import csv
import datetime as dt
import zoneinfo
from collections.abc import Iterable, Iterator
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.models import Agent
from ai_agents.rules.inbox_labels import CHANNELS
from ai_agents.selectors.stats import StatsPeriod, conversation_rows, stats_body, stats_read
from ai_agents.selectors.stats import stats_rows as figures_rows
from erp.api.views import TenantAPIView
from erp.llm.api import UsageQuerySerializer
from erp.streaming import RowsStreamingHttpResponse
from erp.tenancy.models import Tenant
from erp.tenancy.permissions import HasTenant

# Days a period may name (the end of the last day must stay a representable time).
FIRST_DAY = dt.date(1970, 1, 1)
LAST_DAY = dt.date(2999, 12, 31)
# A cell starting with one of these is a formula to a spreadsheet: it is quoted as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class StatsQuerySerializer(UsageQuerySerializer):
    agent = serializers.UUIDField(required=False)
    channel = serializers.CharField(required=False, max_length=50)
    group_by = None  # type: ignore[assignment]  # not a parameter of the statistics

    def validate_agent(self, value: Any) -> str:
        tenant = self.context["tenant"]
        if not Agent.objects.for_tenant(tenant).filter(pk=value).exists():
            raise serializers.ValidationError(_("No existe ese agente."), code="invalid")
        return str(value)

    def validate_channel(self, value: str) -> str:
        if value not in CHANNELS:
            choices = ", ".join(sorted(CHANNELS))
            raise serializers.ValidationError(
                _("Canal desconocido; use uno de: %(choices)s.") % {"choices": choices},
                code="invalid",
            )
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for name in ("from", "to"):
            if name in attrs and not FIRST_DAY <= attrs[name] <= LAST_DAY:
                message = _("Use una fecha entre %(first)s y %(last)s.")
                period = {"first": FIRST_DAY.isoformat(), "last": LAST_DAY.isoformat()}
                raise serializers.ValidationError({name: [message % period]}, code="invalid")
        dates = super().validate({**attrs, "group_by": "day"})
        return {**dates, "agent": attrs.get("agent"), "channel": attrs.get("channel")}


def stats_period(tenant: Tenant, params: Any) -> StatsPeriod:
    """The period asked for in `params` (query string); raises ValidationError (400)."""
    zone = zoneinfo.ZoneInfo(tenant.timezone or timezone.get_default_timezone_name())
    query = StatsQuerySerializer(data=params, context={"tz": zone, "tenant": tenant})
    query.is_valid(raise_exception=True)
    data = query.validated_data
    return StatsPeriod(
        tenant_id=tenant.pk,
        zone=zone,
        date_from=data["from"],
        date_to=data["to"],
        agent_id=data["agent"],
        channel=data["channel"],
    )


class _Echo:
    def write(self, value: str) -> str:
        return value


def _safe(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_response(rows: Iterable[list[Any]], filename: str) -> RowsStreamingHttpResponse:
    """A streamed CSV download, under ASGI too (cells that a spreadsheet would run as formulas
    are quoted)."""
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield "\ufeff"  # a BOM: spreadsheets then read the accents as UTF-8
        for row in rows:
            yield writer.writerow([_safe(value) for value in row])

    response = RowsStreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _filename(kind: str, period: StatsPeriod) -> str:
    return f"{kind}-{period.date_from.isoformat()}-{period.date_to.isoformat()}.csv"


def stats_csv(period: StatsPeriod) -> RowsStreamingHttpResponse:
    return csv_response(figures_rows(stats_read(period=period)), _filename("stats", period))


def conversations_csv(period: StatsPeriod) -> RowsStreamingHttpResponse:
    return csv_response(conversation_rows(period=period), _filename("conversations", period))


class _Percentiles(serializers.Serializer):
    p50 = serializers.IntegerField(allow_null=True)
    p90 = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()


class _FirstResponse(serializers.Serializer):
    bot = _Percentiles()
    people = _Percentiles()


class _Csat(serializers.Serializer):
    average = serializers.FloatField(allow_null=True)
    responses = serializers.IntegerField()


class _Reason(serializers.Serializer):
    reason = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.label
    count = serializers.IntegerField()


class _Day(serializers.Serializer):
    day = serializers.DateField()
    conversations = serializers.IntegerField()
    escalated = serializers.IntegerField()
    resolved_by_ai = serializers.IntegerField()


class _Question(serializers.Serializer):
    question = serializers.CharField()
    count = serializers.IntegerField()
    examples = serializers.ListField(child=serializers.CharField())


class StatsBodySerializer(serializers.Serializer):
    """The response of `GET /api/v1/stats` (documentation; built by `stats_body`)."""

    to = serializers.DateField()
    timezone = serializers.CharField()
    agent = serializers.UUIDField(allow_null=True)
    channel = serializers.CharField(allow_null=True)
    conversations = serializers.IntegerField()
    messages = serializers.IntegerField()
    resolved_by_ai = serializers.IntegerField()
    ai_resolution_rate = serializers.FloatField(allow_null=True)
    escalated = serializers.IntegerField()
    escalations_by_reason = _Reason(many=True)
    first_response_ms = _FirstResponse()
    csat = _Csat()
    cost_usd = serializers.DecimalField(max_digits=16, decimal_places=6)
    cost_per_conversation_usd = serializers.DecimalField(
        max_digits=16, decimal_places=6, allow_null=True
    )
    cost_per_resolved_usd = serializers.DecimalField(
        max_digits=16, decimal_places=6, allow_null=True
    )
    per_day = _Day(many=True)
    unanswered_questions = _Question(many=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.DateField()
        return fields


_CSV = {(200, "text/csv"): OpenApiTypes.STR}

_PARAMETERS = [
    OpenApiParameter("from", str, description="AAAA-MM-DD, inclusive (zona de la empresa)"),
    OpenApiParameter("to", str, description="AAAA-MM-DD, inclusive; por defecto hoy"),
    OpenApiParameter("agent", str, description="id de un agente de la empresa"),
    OpenApiParameter("channel", str, enum=sorted(CHANNELS)),
]


class StatsView(TenantAPIView):
    permission_classes = [HasTenant]

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # `?format=csv` is ours (the CSV body is not a DRF renderer): JSON otherwise.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        summary="Estadísticas del periodo (JSON; ?format=csv para CSV)",
        parameters=[*_PARAMETERS, OpenApiParameter("format", str, enum=["json", "csv"])],
        responses={200: StatsBodySerializer, (200, "text/csv"): OpenApiTypes.STR},
    )
    def get(self, request: Request) -> Any:
        period = stats_period(self.tenant, request.query_params)
        if request.query_params.get("format") == "csv":
            return stats_csv(period)
        return Response(stats_body(stats_read(period=period)))


class StatsConversationsView(TenantAPIView):
    permission_classes = [HasTenant]

    @extend_schema(
        summary="Conversaciones del periodo (CSV)", parameters=_PARAMETERS, responses=_CSV
    )
    def get(self, request: Request) -> Any:
        return conversations_csv(stats_period(self.tenant, request.query_params))
