"""Admin: prices edited by superusers only; the usage ledger is read-only and tenant-scoped."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from erp.llm.models import ModelPrice, UsageLog
from erp.llm.usage import usage_record
from erp.tenancy.models import Tenant
from erp.testing.factories import UserFactory

PRICES = "/admin/llm/modelprice/"
LOGS = "/admin/llm/usagelog/"


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def superuser(db: Any) -> Any:
    return UserFactory(username="root@example.test", is_superuser=True)


@pytest.fixture
def price(db: Any) -> ModelPrice:
    return ModelPrice.objects.create(
        provider="openai",
        model="qwen3:8b",
        input_per_million_usd=Decimal("1"),
        output_per_million_usd=Decimal("2"),
    )


@pytest.fixture
def logs(tenant_a: Tenant, tenant_b: Tenant) -> tuple[UsageLog, UsageLog]:
    a = usage_record(tenant=tenant_a, operation="llm_request", provider="openai", model="acme-m")
    b = usage_record(tenant=tenant_b, operation="llm_request", provider="openai", model="globex-m")
    return a, b


def change_form(price: ModelPrice, input_price: str) -> dict[str, str]:
    return {
        "provider": price.provider,
        "model": price.model,
        "input_per_million_usd": input_price,
        "output_per_million_usd": "2",
    }


def test_staff_may_view_prices_but_not_change_them(owner: Any, price: ModelPrice) -> None:
    client = login(owner.user)
    assert client.get(PRICES).status_code == 200
    assert client.get(f"{PRICES}{price.pk}/change/").status_code == 200  # read-only view
    assert client.get(f"{PRICES}add/").status_code == 403

    response = client.post(f"{PRICES}{price.pk}/change/", change_form(price, "9"))

    assert response.status_code == 403
    price.refresh_from_db()
    assert price.input_per_million_usd == Decimal("1")


def test_superuser_edits_prices(superuser: Any, price: ModelPrice) -> None:
    response = login(superuser).post(f"{PRICES}{price.pk}/change/", change_form(price, "9"))
    assert response.status_code == 302
    price.refresh_from_db()
    assert price.input_per_million_usd == Decimal("9")


def test_staff_see_only_their_tenants_usage(
    owner: Any, outsider: Any, logs: tuple[UsageLog, UsageLog]
) -> None:
    mine, theirs = logs
    client = login(owner.user)

    listing = client.get(LOGS)

    assert listing.status_code == 200
    assert "acme-m" in listing.content.decode()
    assert "globex-m" not in listing.content.decode()
    assert client.get(f"{LOGS}{mine.pk}/change/").status_code == 200
    assert client.get(f"{LOGS}{theirs.pk}/change/").status_code == 404


@pytest.mark.parametrize("who", ["owner", "superuser"])
def test_nobody_adds_changes_or_deletes_usage(
    who: str, request: Any, logs: tuple[UsageLog, UsageLog]
) -> None:
    persona = request.getfixturevalue(who)
    client = login(getattr(persona, "user", persona))
    mine, _theirs = logs

    assert client.get(f"{LOGS}add/").status_code == 403
    assert client.post(f"{LOGS}{mine.pk}/delete/", {"post": "yes"}).status_code == 403
    client.post(f"{LOGS}{mine.pk}/change/", {"model": "edited", "cost_usd": "0"})

    row = UsageLog.objects.unscoped().get(pk=mine.pk)
    assert row.model == "acme-m"
    assert UsageLog.objects.unscoped().count() == 2
