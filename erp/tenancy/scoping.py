"""Tenant scoping: the default manager of every tenant-owned model fails closed.

A request, task or command declares which tenants it acts for with `tenant_scope(tenant)`.
`TenantOwnedModel.objects` then filters every query by those tenants and raises
`TenantScopeError` when nothing is in scope. The two ways around it are explicit and
greppable: `Model.objects.for_tenant(tenant)` (scoped by argument) and
`Model.objects.unscoped()` / `all_tenants()` (superuser and maintenance code only).

Forward foreign keys and cascades use Django's plain base manager, so `message.conversation`
and deletes work without a scope; reverse relations (`conversation.messages`) need one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Final

from django.db import models

if TYPE_CHECKING:
    from erp.tenancy.models import Tenant


class _AllTenants:
    def __repr__(self) -> str:
        return "ALL_TENANTS"


ALL_TENANTS: Final = _AllTenants()
Scope = frozenset[int] | _AllTenants

_scope: ContextVar[Scope | None] = ContextVar("tenant_scope", default=None)


class TenantScopeError(RuntimeError):
    """A tenant-owned table was queried with no tenant in scope."""


def _ids(tenants: Iterable[Tenant | int]) -> frozenset[int]:
    return frozenset(t if isinstance(t, int) else t.pk for t in tenants)


def set_scope(scope: Scope | None) -> Token[Scope | None]:
    return _scope.set(scope)


def reset_scope(token: Token[Scope | None]) -> None:
    _scope.reset(token)


def current_scope() -> Scope | None:
    return _scope.get()


@contextmanager
def tenant_scope(*tenants: Tenant | int) -> Iterator[None]:
    """Act for these tenants (usually one) inside the block."""
    token = _scope.set(_ids(tenants))
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def all_tenants() -> Iterator[None]:
    """Escape hatch: superuser admin and maintenance code that must see every tenant."""
    token = _scope.set(ALL_TENANTS)
    try:
        yield
    finally:
        _scope.reset(token)


class TenantQuerySet(models.QuerySet[Any]):
    pass


class TenantManager(models.Manager[Any]):
    _queryset_class = TenantQuerySet

    def get_queryset(self) -> models.QuerySet[Any]:
        scope = _scope.get()
        if scope is None:
            raise TenantScopeError(
                f"{self.model.__name__} queried with no tenant in scope; use tenant_scope(), "
                f".for_tenant() or, for maintenance code, .unscoped()"
            )
        queryset = super().get_queryset()
        if scope is ALL_TENANTS:
            return queryset
        assert isinstance(scope, frozenset)
        return queryset.filter(tenant_id__in=scope)

    def for_tenant(self, tenant: Tenant | int) -> models.QuerySet[Any]:
        tenant_id = tenant if isinstance(tenant, int) else tenant.pk
        return super().get_queryset().filter(tenant_id=tenant_id)

    def unscoped(self) -> models.QuerySet[Any]:
        """Every tenant's rows. Superuser and maintenance code only."""
        return super().get_queryset()
