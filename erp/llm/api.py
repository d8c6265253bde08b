"""`GET /api/v1/usage`: token and cost totals of the caller's tenant."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from erp.api.views import TenantAPIView
from erp.llm.selectors import GROUP_BY_CHOICES, usage_summary

DEFAULT_DAYS = 30
MAX_DAYS = 366


class UsageQuerySerializer(serializers.Serializer):
    to = serializers.DateField(required=False, input_formats=["%Y-%m-%d"])
    group_by = serializers.ChoiceField(choices=GROUP_BY_CHOICES, required=False, default="day")

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # `from` is a Python keyword, so it cannot be declared as a class attribute.
        fields["from"] = serializers.DateField(required=False, input_formats=["%Y-%m-%d"])
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        today = dt.datetime.now(self.context["tz"]).date()
        date_to = attrs.get("to") or today
        date_from = attrs.get("from") or date_to - dt.timedelta(days=DEFAULT_DAYS - 1)
        if date_from > date_to:
            raise serializers.ValidationError(
                {"from": _("Debe ser anterior o igual a «to».")}, code="invalid"
            )
        if (date_to - date_from).days >= MAX_DAYS:
            raise serializers.ValidationError(
                {"from": _("El intervalo no puede superar %(days)s días.") % {"days": MAX_DAYS}},
                code="invalid",
            )
        return {"from": date_from, "to": date_to, "group_by": attrs["group_by"]}


class UsageTotalsSerializer(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=16, decimal_places=6)
    calls = serializers.IntegerField()
    errors = serializers.IntegerField()  # type: ignore[assignment]  # a field, not Serializer.errors


class UsageGroupSerializer(UsageTotalsSerializer):
    key = serializers.CharField(
        allow_null=True,
        help_text=_("Día (AAAA-MM-DD), id del agente (null: fuera de un agente) o modelo."),
    )
    provider = serializers.CharField(required=False, help_text=_("Solo con group_by=model."))


class UsageReportSerializer(serializers.Serializer):
    results = UsageGroupSerializer(many=True)
    next = serializers.CharField(allow_null=True)
    totals = UsageTotalsSerializer()
    to = serializers.DateField(help_text=_("Último día incluido (efectivo)."))

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.DateField(help_text=_("Primer día incluido (efectivo)."))
        return fields


class UsageView(TenantAPIView):
    @extend_schema(
        summary="Consumo de IA: tokens y costo",
        parameters=[
            OpenApiParameter("from", str, description="AAAA-MM-DD, inclusive (zona de la empresa)"),
            OpenApiParameter("to", str, description="AAAA-MM-DD, inclusive; por defecto hoy"),
            OpenApiParameter("group_by", str, enum=list(GROUP_BY_CHOICES)),
        ],
        responses=UsageReportSerializer,
    )
    def get(self, request: Request) -> Response:
        tz = zoneinfo.ZoneInfo(self.tenant.timezone or timezone.get_default_timezone_name())
        query = UsageQuerySerializer(data=request.query_params, context={"tz": tz})
        query.is_valid(raise_exception=True)
        params = query.validated_data
        summary = usage_summary(
            tenant=self.tenant,
            date_from=params["from"],
            date_to=params["to"],
            group_by=params["group_by"],
        )
        results = []
        for group in summary.groups:
            row: dict[str, Any] = {"key": group.key, **group.totals.as_dict()}
            if group.provider is not None:
                row["provider"] = group.provider
            results.append(row)
        return Response(
            {
                "results": results,
                "next": None,
                "totals": summary.totals.as_dict(),
                "from": params["from"].isoformat(),
                "to": params["to"].isoformat(),
            }
        )
