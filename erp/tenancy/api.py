from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from erp.api.views import TenantAPIView, TenantGenericAPIView
from erp.tenancy.models import ApiKey, Tenant
from erp.tenancy.permissions import IsTenantManager
from erp.tenancy.selectors import access_api_key, api_key_list
from erp.tenancy.services import apikey_create, apikey_revoke


class TenantSerializer(serializers.ModelSerializer):
    class Meta:
        model = Tenant
        fields = [
            "id",
            "slug",
            "name",
            "timezone",
            "language",
            "ai_credit_balance_usd",
            "is_active",
        ]
        read_only_fields = fields


class ApiKeySerializer(serializers.ModelSerializer):
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at", "active"]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at", "active"]


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.CharField(read_only=True, help_text=_("Se muestra solo esta vez."))

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)


class CurrentTenantView(TenantAPIView):
    @extend_schema(responses=TenantSerializer, summary="La empresa de la credencial")
    def get(self, request: Request) -> Response:
        return Response(TenantSerializer(self.tenant).data)


class ApiKeyListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [IsTenantManager]
    serializer_class = ApiKeySerializer

    def get_queryset(self) -> Any:
        return api_key_list(tenant=self.tenant)

    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer})
    def post(self, request: Request) -> Response:
        form = ApiKeyCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        user = request.user  # IsTenantManager: a signed-in staff member
        created = apikey_create(
            tenant=self.tenant,
            name=form.validated_data["name"],
            created_by=user if user.is_authenticated else None,
        )
        data = ApiKeySerializer(created.api_key).data
        data["key"] = created.key
        return Response(data, status=status.HTTP_201_CREATED)


class ApiKeyDetailView(TenantGenericAPIView):
    permission_classes = [IsTenantManager]
    serializer_class = ApiKeySerializer

    def get(self, request: Request, key_id: int) -> Response:
        return Response(ApiKeySerializer(access_api_key(self.tenant, key_id)).data)

    @extend_schema(responses={200: ApiKeySerializer}, summary="Revoca la clave")
    def delete(self, request: Request, key_id: int) -> Response:
        api_key = apikey_revoke(api_key=access_api_key(self.tenant, key_id))
        return Response(ApiKeySerializer(api_key).data)
