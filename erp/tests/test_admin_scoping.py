"""Every admin page of a tenant-owned model is scoped (staff see only their tenants' rows,
another tenant's row is a 404). The behaviour is proven on concrete models in
test_tenant_isolation.py; this test makes sure no tenant-owned model escapes the mechanism."""

import pytest
from django.contrib import admin

from erp.tenancy.admin_base import TenantAdminMixin
from erp.tenancy.models import TenantOwnedModel


def test_every_tenant_owned_model_admin_is_scoped():
    unscoped = [
        f"{model._meta.label} -> {type(model_admin).__name__}"
        for model, model_admin in admin.site._registry.items()
        if issubclass(model, TenantOwnedModel) and not isinstance(model_admin, TenantAdminMixin)
    ]
    assert unscoped == []


@pytest.mark.django_db
def test_outsider_gets_404_on_every_tenant_owned_change_page(client, outsider):
    """For every registered tenant-owned admin: a row id the outsider cannot see is a 404."""
    import uuid

    client.force_login(outsider.user)
    for model in admin.site._registry:
        if not issubclass(model, TenantOwnedModel):
            continue
        pk_field = model._meta.pk
        missing = uuid.uuid4() if pk_field.get_internal_type() == "UUIDField" else 987654321
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/{missing}/change/"
        assert client.get(url).status_code == 404, url


def _api_views():
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(patterns, prefix=""):
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern):
                yield route, getattr(entry.callback, "cls", None)

    return list(walk(get_resolver().url_patterns))


def test_every_tenant_api_view_runs_in_tenant_scope():
    """Views under /api/v1/ act for the caller's tenant only (TenantScopedMixin)."""
    from erp.api.views import TenantScopedMixin

    routes = [(route, cls) for route, cls in _api_views() if route.startswith("api/v1/")]
    assert len(routes) >= 10
    unscoped = [
        route for route, cls in routes if cls is None or not issubclass(cls, TenantScopedMixin)
    ]
    assert unscoped == []
