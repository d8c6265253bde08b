"""Regression: a key whose random part contains "_" (token_urlsafe emits it) authenticates."""

from __future__ import annotations

from typing import Any

from erp.tenancy import services
from erp.tenancy.models import Tenant


def test_key_with_underscores_in_the_random_part_authenticates(
    tenant_a: Tenant, monkeypatch: Any
) -> None:
    monkeypatch.setattr(services.secrets, "token_urlsafe", lambda n: "abc_def_ghi")
    created = services.apikey_create(tenant=tenant_a, name="underscore")
    assert created.key.endswith("_abc_def_ghi")

    authenticated = services.apikey_authenticate(key=created.key)

    assert authenticated is not None and authenticated.pk == created.api_key.pk
    assert services.apikey_authenticate(key=created.key + "x") is None
