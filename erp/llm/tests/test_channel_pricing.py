"""The channel price table: country from the phone number, the row in force on a date, the
"*" row for other countries, and one ledger row per charge key."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest

from erp.llm.budget import month_spend
from erp.llm.models import ChannelPrice, UsageLog
from erp.llm.pricing import channel_charge_record, channel_price, phone_country
from erp.tenancy.models import Tenant

# The seed rates (not a transactional test's flushed table).
pytestmark = pytest.mark.usefixtures("channel_prices")


@pytest.mark.parametrize(
    ("phone", "country"),
    [
        ("+52 55 1234 5678", "MX"),
        ("5215512345678", "MX"),
        ("+1 650 555 1234", "US"),
        ("+1 809 555 1234", "DO"),  # longest prefix: 1809 before 1
        ("+34 600 000 000", "ES"),
        ("+593 99 123 4567", "EC"),  # 593 before 59 (none) and 5 (none)
        ("+999 123", "*"),
        ("", "*"),
    ],
)
def test_the_country_is_the_longest_calling_code_prefix(phone: str, country: str) -> None:
    assert phone_country(phone) == country


@pytest.mark.django_db
def test_the_price_in_force_on_the_day_by_country_and_category() -> None:
    # given: the seed rows (from 2026-10-01) and a new MX service rate from 2027-01-01
    ChannelPrice.objects.create(
        country="MX", category="service", price_usd=Decimal("0.0070"), valid_from="2027-01-01"
    )

    def price(country: str, category: str, day: str) -> Decimal:
        on = dt.date.fromisoformat(day)
        return channel_price(channel="whatsapp", country=country, category=category, on=on)

    # then: the latest row not after the day applies
    assert price("MX", "service", "2026-12-31") == Decimal("0.008500")  # like utility (0006)
    assert price("MX", "service", "2027-01-01") == Decimal("0.007000")
    assert price("MX", "marketing", "2027-01-01") == Decimal("0.030500")
    assert price("ES", "authentication", "2026-11-15") == Decimal("0.020000")
    # a country without rows costs the "*" row; before any row, nothing
    assert price("EC", "utility", "2026-11-15") == Decimal("0.010000")
    assert price("MX", "service", "2026-09-30") == Decimal("0")
    assert price("MX", "service", "2026-10-01") == Decimal("0.008500")


@pytest.mark.django_db
def test_a_charge_key_is_billed_once(tenant_a: Tenant, tenant_b: Tenant) -> None:
    conversation = uuid.uuid4()
    for _attempt in range(3):
        channel_charge_record(
            tenant=tenant_a,
            charge_key="whatsapp:1",
            channel="whatsapp",
            phone="5215512345678",
            category="service",
            conversation_id=conversation,
        )
    # the same key in another tenant is that tenant's own charge
    channel_charge_record(
        tenant=tenant_b,
        charge_key="whatsapp:1",
        channel="whatsapp",
        phone="34600000000",
        category="marketing",
    )

    [row] = UsageLog.objects.for_tenant(tenant_a)
    assert (row.operation, row.provider, row.model, row.cost_usd) == (
        "channel_message",
        "whatsapp",
        "MX/service",
        Decimal("0.008500"),
    )
    assert row.conversation_id == conversation
    [other] = UsageLog.objects.for_tenant(tenant_b)
    assert (other.model, other.cost_usd) == ("ES/marketing", Decimal("0.061500"))
    # a charge is Meta's bill, not the AI credit
    balance = Tenant.objects.get(pk=tenant_a.pk).ai_credit_balance_usd
    assert balance == tenant_a.ai_credit_balance_usd


@pytest.mark.django_db
def test_only_a_new_charge_moves_the_cached_month_spend(
    tenant_a: Tenant, tenant_b: Tenant, django_assert_num_queries: Any
) -> None:
    # given: a tenant with a budget whose month spend is cached (nothing spent yet)
    tenant_a.monthly_budget_usd = Decimal("100.00")
    tenant_a.save()
    assert month_spend(tenant=tenant_a) == Decimal("0")

    def charge(tenant: Tenant, key: str) -> bool:
        return channel_charge_record(
            tenant=tenant,
            charge_key=key,
            channel="whatsapp",
            phone="5215512345678",
            category="service",
        )

    # when: a message is billed, then its retry comes back with the same key
    assert charge(tenant_a, "whatsapp:1") is True
    with django_assert_num_queries(0):  # the cache grew by the price: no new sum
        assert month_spend(tenant=tenant_a) == Decimal("0.0085")
    assert charge(tenant_a, "whatsapp:1") is False

    # then: the duplicate neither adds to the cached figure nor drops it
    with django_assert_num_queries(0):
        assert month_spend(tenant=tenant_a) == Decimal("0.0085")
    # another tenant's charge with the same key is its own, and not tenant A's spend
    assert charge(tenant_b, "whatsapp:1") is True
    assert charge(tenant_a, "whatsapp:2") is True
    with django_assert_num_queries(0):
        assert month_spend(tenant=tenant_a) == Decimal("0.017")


@pytest.mark.django_db
def test_service_priced_like_utility_leaves_an_edited_row_alone_and_reverses() -> None:
    import importlib

    from django.apps import apps

    migration = importlib.import_module("erp.llm.migrations.0006_service_priced_like_utility")
    seed_day = dt.date(2026, 10, 1)

    def service(country: str) -> Decimal:
        row = ChannelPrice.objects.get(country=country, category="service", valid_from=seed_day)
        return row.price_usd

    # given: the seed after 0006, and an owner who set ES's service rate by hand
    ChannelPrice.objects.filter(country="ES", category="service").update(price_usd="0.0123")

    # when: 0006 is reversed, then applied again
    migration.service_back(apps, None)
    assert (service("MX"), service("US"), service("ES")) == (
        Decimal("0.005000"),
        Decimal("0.003000"),
        Decimal("0.012300"),  # the owner's figure is not the seed's: untouched
    )
    migration.service_like_utility(apps, None)

    # then: every unedited seed service row costs its country's utility figure
    for country in ("MX", "US", "AR", "BR", "*"):
        utility = ChannelPrice.objects.get(country=country, category="utility").price_usd
        assert service(country) == utility
    assert service("ES") == Decimal("0.012300")
