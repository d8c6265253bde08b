"""Reads on tenants, members and API keys, and the guarded `access_*` loaders.

`access_*` put the tenant inside the query and raise the same 404 for "malformed", "missing"
and "not yours", so an outsider learns nothing about other tenants' ids and views never check
an id's shape themselves.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import models
from django.http import Http404

from erp.tenancy.models import ApiKey, Membership, Tenant

M = TypeVar("M", bound=models.Model)


def access_tenant_object(
    model: type[M], tenant: Tenant, pk: Any, *, queryset: models.QuerySet[M] | None = None
) -> M:
    """The tenant's `model` row with this primary key (from `queryset` when given, which must
    be scoped to the tenant already), or 404 for a malformed id, a missing or a foreign row."""
    value = pk_or_none(model, pk)
    if value is None:
        raise Http404
    if queryset is None:
        queryset = model.objects.for_tenant(tenant)  # type: ignore[attr-defined]  # tenant-owned models have TenantManager
    try:
        return queryset.get(pk=value)
    except model.DoesNotExist:  # type: ignore[attr-defined]  # every concrete model has it
        raise Http404 from None


def pk_or_none(model: type[models.Model], value: Any) -> Any:
    """`value` as `model`'s primary key, or None when it cannot be one (`"abc"` for a UUID or
    an integer key): such a value must never reach the database, which would refuse it."""
    if value is None:
        return None
    field = model._meta.pk
    assert field is not None
    try:
        key = field.to_python(value)
        field.run_validators(key)  # an integer key past the column's range, for one
    except (ValidationError, ValueError, TypeError, OverflowError):
        return None
    return key


def access_api_key(tenant: Tenant, key_id: Any) -> ApiKey:
    return access_tenant_object(ApiKey, tenant, key_id)


def api_key_list(*, tenant: Tenant) -> models.QuerySet[ApiKey]:
    return ApiKey.objects.for_tenant(tenant).order_by("-created_at", "-id")


def user_memberships(user: AbstractBaseUser) -> models.QuerySet[Membership]:
    # Crossing tenants is the point here: which tenants may this user act for?
    return (
        Membership.objects.unscoped()
        .filter(user=user, tenant__is_active=True)
        .select_related("tenant")
        .order_by("tenant__name")
    )


def membership_for(user: AbstractBaseUser, tenant_slug: str | None) -> Membership | None:
    memberships = user_memberships(user)
    if tenant_slug:
        return memberships.filter(tenant__slug=tenant_slug).first()
    return memberships.first()


def tenant_ids_for(user: AbstractBaseUser | AnonymousUser) -> list[int]:
    if not user.is_authenticated:
        return []  # nobody signed in acts for no tenant
    return list(user_memberships(user).values_list("tenant_id", flat=True))


def team_members(*, tenant: Tenant) -> list[Membership]:
    """The tenant's members with their accounts: owners first, then admins, then agents."""
    order = {Membership.Role.OWNER: 0, Membership.Role.ADMIN: 1, Membership.Role.AGENT: 2}
    members = Membership.objects.for_tenant(tenant).select_related("user").order_by("user__email")
    return sorted(members, key=lambda m: order.get(m.role, 3))
