"""The usage ledger: one row per attempt with its columns, cost, atomic debit."""

from __future__ import annotations

import threading
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from erp.llm.errors import NoCredits
from erp.llm.models import ModelPrice, UsageLog
from erp.llm.usage import credits_ensure, usage_record
from erp.tenancy.models import Tenant
from erp.testing import deadlines
from erp.testing.factories import TenantFactory


def balance(tenant: Tenant) -> Decimal:
    tenant.refresh_from_db()
    return tenant.ai_credit_balance_usd


@pytest.fixture
def enforce(settings: Any) -> None:
    settings.AI_CREDITS_MODE = "enforce"


def test_row_has_the_spec_columns_and_cost_from_the_price_table(
    tenant_a: Tenant, enforce: None
) -> None:
    ModelPrice.objects.create(
        provider="openai",
        model="qwen3:8b",
        input_per_million_usd=Decimal("1.50"),
        output_per_million_usd=Decimal("6.00"),
    )
    agent_id, conversation_id, message_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    log = usage_record(
        tenant=tenant_a,
        operation="llm_request",
        provider="openai",
        model="qwen3:8b",
        input_tokens=1000,
        output_tokens=500,
        latency_ms=321,
        agent_id=agent_id,
        conversation_id=conversation_id,
        message_id=message_id,
    )

    row = UsageLog.objects.for_tenant(tenant_a).get(pk=log.pk)
    assert (row.tenant_id, row.agent_id, row.conversation_id, row.message_id) == (
        tenant_a.pk,
        agent_id,
        conversation_id,
        message_id,
    )
    assert (row.operation, row.provider, row.model) == ("llm_request", "openai", "qwen3:8b")
    assert (row.input_tokens, row.output_tokens, row.total_tokens) == (1000, 500, 1500)
    assert row.cost_usd == Decimal("0.004500")  # 1000 * 1.5e-6 + 500 * 6e-6
    assert (row.latency_ms, row.success, row.error_message) == (321, True, "")
    assert row.created_at is not None
    assert balance(tenant_a) == Decimal("99.995500")


def test_default_prices_apply_without_a_price_row_and_a_row_overrides_them(
    tenant_a: Tenant, enforce: None
) -> None:
    default = usage_record(
        tenant=tenant_a,
        operation="llm_request",
        provider="google",
        model="gemini-2.5-flash",
        input_tokens=2000,
        output_tokens=400,
    )
    assert default.cost_usd == Decimal("0.001600")  # 2000 * 0.30e-6 + 400 * 2.50e-6
    assert balance(tenant_a) == Decimal("99.998400")

    ModelPrice.objects.create(
        provider="google",
        model="gemini-2.5-flash",
        input_per_million_usd=Decimal("1"),
        output_per_million_usd=Decimal("0"),
    )
    override = usage_record(
        tenant=tenant_a,
        operation="llm_request",
        provider="google",
        model="gemini-2.5-flash",
        input_tokens=2000,
        output_tokens=400,
    )
    assert override.cost_usd == Decimal("0.002000")


def test_unknown_model_and_free_gemma_cost_nothing(tenant_a: Tenant, enforce: None) -> None:
    for provider, model in [("openai", "llama3.2:3b"), ("google", "gemma-4-26b-a4b-it")]:
        log = usage_record(
            tenant=tenant_a,
            operation="llm_request",
            provider=provider,
            model=model,
            input_tokens=5000,
            output_tokens=5000,
        )
        assert log.cost_usd == Decimal("0")
    assert balance(tenant_a) == Decimal("100")


def test_a_failed_attempt_is_recorded_without_agent_and_costs_nothing(
    tenant_a: Tenant, enforce: None
) -> None:
    log = usage_record(
        tenant=tenant_a,
        operation="llm_request",
        provider="openai",
        model="gpt-4o-mini",
        latency_ms=30000,
        success=False,
        error_message="Timeout: sin respuesta en 30 s",
    )
    row = UsageLog.objects.for_tenant(tenant_a).get(pk=log.pk)
    assert (row.success, row.error_message, row.cost_usd) == (
        False,
        "Timeout: sin respuesta en 30 s",
        Decimal("0"),
    )
    assert (row.agent_id, row.conversation_id, row.message_id) == (None, None, None)
    assert balance(tenant_a) == Decimal("100")


def test_credits_off_records_usage_without_debit(tenant_a: Tenant, settings: Any) -> None:
    settings.AI_CREDITS_MODE = "off"
    log = usage_record(
        tenant=tenant_a,
        operation="embedding",
        provider="openai",
        model="text-embedding-3-small",
        input_tokens=1_000_000,
    )
    assert log.cost_usd == Decimal("0.020000")
    assert balance(tenant_a) == Decimal("100")


def test_credits_ensure_per_mode(settings: Any, db: Any) -> None:
    spent = TenantFactory.create(slug="spent", ai_credit_balance_usd=Decimal("0"))
    owing = TenantFactory.create(slug="owing", ai_credit_balance_usd=Decimal("-0.5"))
    rich = TenantFactory.create(slug="rich", ai_credit_balance_usd=Decimal("0.000001"))

    settings.AI_CREDITS_MODE = "enforce"
    for tenant in (spent, owing):
        with pytest.raises(NoCredits):
            credits_ensure(tenant=tenant)
    credits_ensure(tenant=rich)

    for mode in ("overdraft", "off"):
        settings.AI_CREDITS_MODE = mode
        for tenant in (spent, owing, rich):
            credits_ensure(tenant=tenant)


def test_spending_the_balance_makes_the_next_call_fail_fast(
    settings: Any, db: Any, enforce: None
) -> None:
    tenant = TenantFactory.create(slug="small", ai_credit_balance_usd=Decimal("0.002"))
    ModelPrice.objects.create(
        provider="openai",
        model="m",
        input_per_million_usd=Decimal("1000"),
        output_per_million_usd=Decimal("0"),
    )
    credits_ensure(tenant=tenant)
    usage_record(
        tenant=tenant, operation="llm_request", provider="openai", model="m", input_tokens=2
    )
    assert balance(tenant) == Decimal("0")
    with pytest.raises(NoCredits):
        credits_ensure(tenant=tenant)

    settings.AI_CREDITS_MODE = "overdraft"
    credits_ensure(tenant=tenant)
    usage_record(
        tenant=tenant, operation="llm_request", provider="openai", model="m", input_tokens=2
    )
    assert balance(tenant) == Decimal("-0.002")


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_calls_debit_exactly_twenty_times(settings: Any) -> None:
    settings.AI_CREDITS_MODE = "enforce"
    tenant = TenantFactory.create(slug="busy", ai_credit_balance_usd=Decimal("100"))
    ModelPrice.objects.create(
        provider="openai",
        model="m",
        input_per_million_usd=Decimal("250000"),  # 2 tokens -> 0.5 USD
        output_per_million_usd=Decimal("0"),
    )
    barrier = deadlines.barrier(20)
    failures: list[BaseException] = []

    def call() -> None:
        try:
            barrier.wait()
            usage_record(
                tenant=tenant, operation="llm_request", provider="openai", model="m", input_tokens=2
            )
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)

    assert failures == []
    assert UsageLog.objects.for_tenant(tenant).count() == 20
    assert balance(tenant) == Decimal("90")
