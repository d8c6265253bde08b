"""Admin for tenant-owned models: staff see and change only their tenants' rows.

Permissions come from the membership role, not Django's per-model permissions: owner and
admin manage their tenant's rows, agents only view; superusers see every tenant. A row of
another tenant is a 404, never a redirect that would confirm it exists.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import Http404, HttpRequest

from erp.tenancy.models import Membership, Tenant
from erp.tenancy.selectors import user_memberships


def managed_tenant_ids(request: HttpRequest) -> list[int]:
    if not request.user.is_authenticated:
        return []
    cached = getattr(request, "_managed_tenant_ids", None)
    if cached is None:
        cached = [m.tenant_id for m in user_memberships(request.user) if m.can_manage]
        request._managed_tenant_ids = cached  # type: ignore[attr-defined]
    return cached


def member_tenant_ids(request: HttpRequest) -> list[int]:
    if not request.user.is_authenticated:
        return []
    cached = getattr(request, "_member_tenant_ids", None)
    if cached is None:
        cached = [m.tenant_id for m in user_memberships(request.user)]
        request._member_tenant_ids = cached  # type: ignore[attr-defined]
    return cached


class TenantAdminMixin:
    """Role-based permissions and 404 for rows outside the user's tenants."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser or member_tenant_ids(request))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser or member_tenant_ids(request))

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return bool(request.user.is_superuser or managed_tenant_ids(request))

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser or managed_tenant_ids(request))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser or managed_tenant_ids(request))

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> Any:
        raise Http404


class TenantOwnedAdmin(TenantAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """ModelAdmin for a `TenantOwnedModel`."""

    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Any]:
        queryset = self.model.objects.unscoped()  # type: ignore[attr-defined]
        if request.user.is_superuser:
            return queryset
        return queryset.filter(tenant_id__in=member_tenant_ids(request))

    def get_list_display(self, request: HttpRequest) -> Any:
        fields = list(super().get_list_display(request))
        if request.user.is_superuser and "tenant" not in fields:
            fields.append("tenant")
        return fields

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = list(super().get_list_filter(request))
        if request.user.is_superuser and "tenant" not in filters:
            filters.append("tenant")
        return filters

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        exclude = list(super().get_exclude(request, obj) or [])
        if not request.user.is_superuser and len(managed_tenant_ids(request)) <= 1:
            exclude.append("tenant")  # set from the membership on save
        return exclude

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser:
            allowed = managed_tenant_ids(request)
            if related is Tenant:
                kwargs["queryset"] = Tenant.objects.filter(pk__in=allowed)
            elif hasattr(related, "objects") and hasattr(related.objects, "for_tenant"):
                kwargs["queryset"] = related.objects.unscoped().filter(tenant_id__in=allowed)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser and hasattr(related.objects, "for_tenant"):
            kwargs["queryset"] = related.objects.unscoped().filter(
                tenant_id__in=managed_tenant_ids(request)
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not request.user.is_superuser:
            allowed = managed_tenant_ids(request)
            if not getattr(obj, "tenant_id", None) and len(allowed) == 1:
                obj.tenant_id = allowed[0]
            if obj.tenant_id not in allowed:
                raise Http404
        super().save_model(request, obj, form, change)


class ReadOnlyTenantOwnedAdmin(TenantOwnedAdmin):
    """A tenant-scoped record written by the system (ledgers, telemetry): viewable only."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def role_of(request: HttpRequest, tenant_id: int) -> str | None:
    for membership in user_memberships(request.user):
        if membership.tenant_id == tenant_id:
            return str(membership.role)
    return None


__all__ = [
    "Membership",
    "ReadOnlyTenantOwnedAdmin",
    "TenantAdminMixin",
    "TenantOwnedAdmin",
    "role_of",
]
