from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import models
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from erp.tenancy.admin_base import (
    TenantAdminMixin,
    TenantOwnedAdmin,
    member_tenant_ids,
    owned_tenant_ids,
    role_in,
)
from erp.tenancy.models import ApiKey, Membership, Tenant
from erp.tenancy.services import apikey_create, apikey_revoke


@admin.register(Tenant)
class TenantAdmin(TenantAdminMixin, admin.ModelAdmin):
    tenant_lookup = "pk"
    list_display = [
        "name",
        "slug",
        "timezone",
        "language",
        "ai_credit_balance_usd",
        "monthly_budget_usd",
        "is_active",
    ]
    search_fields = ["name", "slug"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "timezone", "language", "is_active"]}),
        (
            _("Créditos y presupuesto"),
            {
                "fields": [
                    "ai_credit_balance_usd",
                    "monthly_budget_usd",
                    "budget_action",
                    "budget_cheaper_model",
                ]
            },
        ),
    ]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Tenant]:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(pk__in=member_tenant_ids(request))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if request.user.is_superuser:
            return []
        return ["slug", "ai_credit_balance_usd", "is_active"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


@admin.register(Membership)
class MembershipAdmin(TenantOwnedAdmin):
    """Only owners change or remove memberships (roles included), and never their own: an
    admin cannot promote itself, an owner cannot lock itself out by mistake."""

    list_display = ["user", "role", "created_at"]
    list_select_related = ["user", "tenant"]
    search_fields = ["user__username", "user__email"]
    autocomplete_fields = ()

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        # New members come from the team page (/team/<slug>/, an invitation by e-mail) or
        # `manage.py user_create` (or a superuser): staff cannot browse other tenants' users
        # to pick one.
        return bool(request.user.is_superuser)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else [*fields, "user"]

    def can_write(self, request: HttpRequest, obj: Any = None) -> bool:
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(owned_tenant_ids(request))
        own = obj.user_id == request.user.pk
        return role_in(request, obj.tenant_id) == Membership.Role.OWNER and not own


@admin.register(ApiKey)
class ApiKeyAdmin(TenantOwnedAdmin):
    list_display = ["name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke_keys"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        self.check_target_tenant(request, obj, change)
        user = request.user  # the admin lets only signed-in staff this far
        created = apikey_create(
            tenant=Tenant.objects.get(pk=obj.tenant_id),
            name=obj.name,
            created_by=user if user.is_authenticated else None,
        )
        obj.pk = created.api_key.pk
        obj.prefix = created.api_key.prefix
        self.message_user(
            request,
            _("Clave creada. Cópiela ahora, no se volverá a mostrar: %(key)s")
            % {"key": created.key},
            messages.WARNING,
        )

    @admin.action(description=_("Revocar las claves seleccionadas"), permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: models.QuerySet[ApiKey]) -> None:
        for api_key in queryset:
            apikey_revoke(api_key=api_key)
        self.message_user(request, _("Claves revocadas."), messages.SUCCESS)
