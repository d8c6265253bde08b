"""Admin: the channel price table (superusers edit, staff read), the budget in the tenant's
settings (its owner, never another tenant's), and the budget notices per tenant."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from erp.llm.models import BudgetNotice, ChannelPrice
from erp.tenancy.models import Tenant
from erp.testing.factories import UserFactory

PRICES = "/admin/llm/channelprice/"
TENANTS = "/admin/tenancy/tenant/"
NOTICES = "/admin/llm/budgetnotice/"


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def price(db: Any) -> ChannelPrice:
    return ChannelPrice.objects.create(
        country="MX", category="service", price_usd=Decimal("0.004"), valid_from="2030-01-01"
    )


def price_form(value: str) -> dict[str, str]:
    return {
        "channel": "whatsapp",
        "country": "MX",
        "category": "service",
        "price_usd": value,
        "valid_from": "2030-01-01",
    }


def budget_form(tenant: Tenant, **budget: str) -> dict[str, str]:
    return {
        "name": tenant.name,
        "timezone": tenant.timezone,
        "language": tenant.language,
        "monthly_budget_usd": "",
        "budget_action": "handoff_only",
        "budget_cheaper_model": "",
        **budget,
    }


def test_superuser_edits_the_channel_price_table(db: Any, price: ChannelPrice) -> None:
    root = UserFactory(username="root@example.test", is_superuser=True)

    response = login(root).post(f"{PRICES}{price.pk}/change/", price_form("0.0065"))

    assert response.status_code == 302
    price.refresh_from_db()
    assert price.price_usd == Decimal("0.006500")


def test_staff_read_the_price_table_but_do_not_change_it(owner: Any, price: ChannelPrice) -> None:
    client = login(owner.user)
    assert client.get(PRICES).status_code == 200
    assert client.post(f"{PRICES}{price.pk}/change/", price_form("9")).status_code == 403
    price.refresh_from_db()
    assert price.price_usd == Decimal("0.004000")


def test_the_owner_sets_the_budget_in_the_tenant_settings(owner: Any) -> None:
    client = login(owner.user)
    tenant = owner.tenant

    page = client.get(f"{TENANTS}{tenant.pk}/change/", HTTP_ACCEPT_LANGUAGE="en")
    assert "Monthly budget (USD)" in page.content.decode()
    response = client.post(
        f"{TENANTS}{tenant.pk}/change/",
        budget_form(
            tenant,
            monthly_budget_usd="250",
            budget_action="cheaper_model",
            budget_cheaper_model="gemini-2.5-flash-lite",
        ),
    )

    assert response.status_code == 302
    tenant.refresh_from_db()
    assert (tenant.monthly_budget_usd, tenant.budget_action, tenant.budget_cheaper_model) == (
        Decimal("250.00"),
        "cheaper_model",
        "gemini-2.5-flash-lite",
    )


def test_a_cheaper_model_action_needs_the_model(owner: Any) -> None:
    tenant = owner.tenant

    response = login(owner.user).post(
        f"{TENANTS}{tenant.pk}/change/",
        budget_form(tenant, monthly_budget_usd="250", budget_action="cheaper_model"),
    )

    assert response.status_code == 200
    assert "Indique a qué modelo cambiar" in response.content.decode()
    tenant.refresh_from_db()
    assert tenant.monthly_budget_usd is None


def test_nobody_sets_another_tenants_budget(owner: Any, outsider: Any) -> None:
    other = outsider.tenant

    response = login(owner.user).post(
        f"{TENANTS}{other.pk}/change/", budget_form(other, monthly_budget_usd="1")
    )

    assert response.status_code == 404
    other.refresh_from_db()
    assert other.monthly_budget_usd is None


def test_budget_notices_are_listed_per_tenant(owner: Any, outsider: Any) -> None:
    for tenant, month in ((owner.tenant, "2026-11"), (outsider.tenant, "2026-10")):
        BudgetNotice.objects.for_tenant(tenant).create(
            tenant=tenant, month=month, threshold=80, spent_usd=8, budget_usd=10
        )

    listing = login(owner.user).get(NOTICES).content.decode()

    assert "2026-11" in listing and "2026-10" not in listing
