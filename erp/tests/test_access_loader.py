"""access_tenant_object: the one guarded loader. Malformed, missing and foreign ids get the
same 404, and a malformed id never reaches the database (no per-view id checks)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext

from erp.tenancy.models import ApiKey
from erp.tenancy.selectors import access_tenant_object, pk_or_none
from erp.tenancy.services import apikey_create

pytestmark = pytest.mark.django_db


def test_the_tenants_row_loads_and_a_foreign_one_is_404(tenant_a: Any, tenant_b: Any) -> None:
    key = apikey_create(tenant=tenant_a, name="crm").api_key
    assert access_tenant_object(ApiKey, tenant_a, key.pk) == key
    assert access_tenant_object(ApiKey, tenant_a, str(key.pk)) == key
    with pytest.raises(Http404):
        access_tenant_object(ApiKey, tenant_b, key.pk)


@pytest.mark.parametrize("value", ["abc", "1.5", "", None, "9" * 400, ["1"], {"a": 1}])
def test_a_malformed_id_is_404_without_a_query(tenant_a: Any, value: Any) -> None:
    with CaptureQueriesContext(connection) as queries, pytest.raises(Http404):
        access_tenant_object(ApiKey, tenant_a, value)
    assert len(queries) == 0


def test_a_queryset_narrows_the_rows(tenant_a: Any) -> None:
    key = apikey_create(tenant=tenant_a, name="crm").api_key
    rows = ApiKey.objects.for_tenant(tenant_a).filter(name="otro")
    with pytest.raises(Http404):
        access_tenant_object(ApiKey, tenant_a, key.pk, queryset=rows)


def test_pk_or_none_reads_the_models_key_type() -> None:
    assert pk_or_none(ApiKey, "12") == 12
    assert pk_or_none(ApiKey, "doce") is None
