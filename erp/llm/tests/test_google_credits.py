"""The usage ledger and the credits of Google calls: a row per attempt, its cost, the balance."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import pytest

from erp.llm.errors import NoCredits
from erp.llm.gateway import CallContext, llm_generate, llm_stream
from erp.llm.models import ModelPrice, UsageLog
from erp.llm.tests.google_kit import FAST, MODEL, ask, balance, rows
from erp.tenancy.models import Tenant
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle


def test_usage_rows_carry_cost_for_success_and_failure(
    fake_google: FakeGoogle, ctx: CallContext, settings: Any
):
    settings.AI_CREDITS_MODE = "enforce"
    ModelPrice.objects.create(
        provider="google",
        model=MODEL,
        input_per_million_usd=Decimal("1.00"),
        output_per_million_usd=Decimal("2.00"),
    )
    fake_google.push(
        fake_google.unavailable(), fake_google.reply("hola", input_tokens=1000, output_tokens=500)
    )
    conversation = __import__("uuid").uuid4()
    context = CallContext(tenant=ctx.tenant, conversation_id=conversation)

    llm_generate(ask(), context=context, retry=FAST)

    failed, ok = rows(ctx.tenant)
    assert (failed.success, failed.cost_usd, failed.total_tokens) == (False, Decimal("0"), 0)
    assert "503" in failed.error_message and "fake-google-key" not in failed.error_message
    assert (ok.success, ok.input_tokens, ok.output_tokens, ok.total_tokens) == (
        True,
        1000,
        500,
        1500,
    )
    assert ok.cost_usd == Decimal("0.002000")  # 1000 * 1/1M + 500 * 2/1M
    assert (ok.provider, ok.model, ok.operation) == ("google", MODEL, "llm_request")
    assert ok.conversation_id == conversation and ok.agent_id is None
    assert ok.latency_ms is not None and ok.latency_ms >= 0
    assert balance(ctx.tenant) == Decimal("100") - Decimal("0.002")


def test_no_credits_fails_fast(fake_google: FakeGoogle, ctx: CallContext, settings: Any):
    settings.AI_CREDITS_MODE = "enforce"
    Tenant.objects.filter(pk=ctx.tenant.pk).update(ai_credit_balance_usd=Decimal("0"))

    with pytest.raises(NoCredits):
        llm_generate(ask(), context=ctx, retry=FAST)
    with pytest.raises(NoCredits):
        next(llm_stream(ask(), context=ctx, retry=FAST))

    assert fake_google.generate_requests == []
    logs = rows(ctx.tenant)
    assert len(logs) == 2 and all(not log.success and log.total_tokens == 0 for log in logs)


def test_balance_spent_by_a_call_then_no_credits(
    fake_google: FakeGoogle, ctx: CallContext, settings: Any
):
    settings.AI_CREDITS_MODE = "enforce"
    Tenant.objects.filter(pk=ctx.tenant.pk).update(ai_credit_balance_usd=Decimal("0.001"))
    ModelPrice.objects.create(
        provider="google",
        model=MODEL,
        input_per_million_usd=Decimal("1"),
        output_per_million_usd=Decimal("1"),
    )
    fake_google.default = fake_google.reply("caro", input_tokens=1000, output_tokens=1000)

    llm_generate(ask(), context=ctx, retry=FAST)  # costs 0.002, the balance goes negative
    with pytest.raises(NoCredits):
        llm_generate(ask(), context=ctx, retry=FAST)

    assert len(fake_google.generate_requests) == 1
    assert balance(ctx.tenant) == Decimal("-0.001")


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_calls_debit_exactly_twenty_times(fake_google: FakeGoogle, settings: Any):
    from erp.testing.factories import TenantFactory

    settings.AI_CREDITS_MODE = "enforce"
    tenant = TenantFactory.create(slug="concurrente")
    ModelPrice.objects.create(
        provider="google",
        model=MODEL,
        input_per_million_usd=Decimal("5"),
        output_per_million_usd=Decimal("5"),
    )
    fake_google.default = fake_google.reply("hola", input_tokens=1000, output_tokens=1000)
    errors: list[BaseException] = []
    barrier = deadlines.barrier(20)

    def call() -> None:
        from django.db import connection

        try:
            barrier.wait()
            llm_generate(ask(), context=CallContext(tenant=tenant), retry=FAST)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)

    assert errors == []
    assert UsageLog.objects.for_tenant(tenant).filter(success=True).count() == 20
    assert balance(tenant) == Decimal("100") - 20 * Decimal("0.01")
