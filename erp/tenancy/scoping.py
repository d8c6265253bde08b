"""Tenant scoping: the default manager of every tenant-owned model fails closed.

A request, task or command declares which tenants it acts for with `tenant_scope(tenant)`.
`TenantOwnedModel.objects` then filters every query by those tenants and raises
`TenantScopeError` when nothing is in scope. The two ways around it are explicit and
greppable: `Model.objects.for_tenant(tenant)` (scoped by argument) and
`Model.objects.unscoped()` / `all_tenants()` (superuser and maintenance code only).

Forward foreign keys and cascades use the base manager (`TenantBaseManager`, not filtered by
the application), so `message.conversation` and deletes work without a scope; reverse
relations (`conversation.messages`) need one.

The scope is also the database's: the backend (erp/tenancy/postgres) sends it with every
transaction and row-level security (erp/tenancy/rls.py) hides the rows of other tenants even
from a statement that forgot its filter. A queryset scoped by argument carries its scope
(`query.rls_scope`) into the statements it runs, including the writes and prefetches that
Django builds as new queries.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Final, TypeVar

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


class TenantBaseManager(models.Manager[Any]):
    """Django's base manager for tenant-owned models (forward foreign keys, cascades): as
    before, not filtered by the application. In a scope, row-level security keeps it to the
    scope's tenants; with no scope at all it follows a reference from a row the code already
    holds, so it uses the explicit bypass (`all_tenants`) rather than finding nothing."""

    def get_queryset(self) -> models.QuerySet[Any]:
        queryset = super().get_queryset()
        if _scope.get() is None:
            queryset.query.rls_scope = ALL_TENANTS  # type: ignore[attr-defined]  # our attribute on Django's Query
        return queryset


F = TypeVar("F", bound=Callable[..., Any])


def acts_for(argument: str) -> Callable[[F], F]:
    """A service that is given its tenant runs in that tenant's scope, as `.for_tenant()`
    does for a queryset: its `argument` keyword is a Tenant, or a tenant-owned instance (its
    `tenant_id`). Its reads, writes and the database's row security then agree with it
    whichever caller (view, task, command, test) it has."""

    def decorate(service: F) -> F:
        @functools.wraps(service)
        def scoped(*args: Any, **kwargs: Any) -> Any:
            owner = kwargs[argument]
            tenant_id = getattr(owner, "tenant_id", None)
            token = _scope.set(frozenset({owner.pk if tenant_id is None else tenant_id}))
            try:
                return service(*args, **kwargs)
            finally:
                _scope.reset(token)

        return scoped  # type: ignore[return-value]  # the wrapper keeps the signature

    return decorate


@contextmanager
def all_tenants() -> Iterator[None]:
    """Escape hatch: superuser admin and maintenance code that must see every tenant."""
    token = _scope.set(ALL_TENANTS)
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def _carried(queryset: models.QuerySet[Any]) -> Iterator[None]:
    scope = getattr(queryset.query, "rls_scope", None)
    if scope is None:
        yield
        return
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


def _carrying(name: str) -> Any:
    """QuerySet.<name>, run with the queryset's own scope: these build queries of their own
    (a delete's collector, an INSERT, prefetches), which do not carry `query.rls_scope`."""
    inherited = getattr(models.QuerySet, name)

    def method(self: models.QuerySet[Any], *args: Any, **kwargs: Any) -> Any:
        with _carried(self):
            return inherited(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = inherited.__doc__
    return method


class TenantQuerySet(models.QuerySet[Any]):
    delete = _carrying("delete")
    create = _carrying("create")
    bulk_create = _carrying("bulk_create")
    bulk_update = _carrying("bulk_update")
    get_or_create = _carrying("get_or_create")
    update_or_create = _carrying("update_or_create")
    _prefetch_related_objects = _carrying("_prefetch_related_objects")


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
        queryset = super().get_queryset().filter(tenant_id=tenant_id)
        queryset.query.rls_scope = frozenset({tenant_id})  # type: ignore[attr-defined]  # our attribute on Django's Query
        return queryset

    def unscoped(self) -> models.QuerySet[Any]:
        """Every tenant's rows. Superuser and maintenance code only: the database's bypass
        too (row-level security's `app.all_tenants`)."""
        queryset = super().get_queryset()
        queryset.query.rls_scope = ALL_TENANTS  # type: ignore[attr-defined]  # our attribute on Django's Query
        return queryset
