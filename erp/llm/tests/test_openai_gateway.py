"""The gateway (retries, deadline, ledger) driving the OpenAI-compatible provider over HTTP."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from erp.llm import errors, gateway
from erp.llm.models import ModelPrice, UsageLog
from erp.llm.types import LlmRequest, LlmResult, Message, TextDelta
from erp.tenancy.models import Tenant
from erp.testing.fake_openai import ChatReply, FakeOpenAI

FAST = gateway.RetryPolicy(timeout_s=2.0, attempts=4, base_delay_s=0.01, factor=2.0)


def ask(**kw: Any) -> LlmRequest:
    return LlmRequest(messages=[Message("user", "¿Abren el sábado?")], model="qwen3:8b", **kw)


def rows(tenant: Tenant) -> list[UsageLog]:
    return list(UsageLog.objects.for_tenant(tenant).order_by("created_at"))


@pytest.fixture
def priced(db: Any, settings: Any) -> None:
    settings.AI_CREDITS_MODE = "enforce"
    ModelPrice.objects.create(
        provider="openai",
        model="qwen3:8b",
        input_per_million_usd=Decimal("1000"),
        output_per_million_usd=Decimal("2000"),
    )


def generate(tenant: Tenant, request: LlmRequest, retry: Any = FAST) -> LlmResult:
    return gateway.llm_generate(
        request,
        context=gateway.CallContext(tenant=tenant),
        provider=gateway.get_provider("openai"),
        retry=retry,
    )


def test_three_retries_on_503_then_unavailable_with_a_row_per_attempt(
    fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None
) -> None:
    fake_openai.script(fake_openai.error(503, "overloaded"))
    with pytest.raises(errors.Unavailable):
        generate(tenant_a, ask())
    assert len(fake_openai.chat_requests) == 4
    ledger = rows(tenant_a)
    assert [(r.success, r.provider, r.model, r.cost_usd) for r in ledger] == [
        (False, "openai", "qwen3:8b", Decimal("0"))
    ] * 4
    assert all("HTTP 503" in r.error_message for r in ledger)


def test_success_after_a_503_is_recorded_with_its_cost_and_debited(
    fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None
) -> None:
    fake_openai.script(
        fake_openai.error(503), ChatReply("Sí", prompt_tokens=100, completion_tokens=10)
    )
    result = generate(tenant_a, ask())
    assert result.text == "Sí"
    ledger = rows(tenant_a)
    assert [(r.success, r.input_tokens, r.output_tokens, r.cost_usd) for r in ledger] == [
        (False, 0, 0, Decimal("0")),
        (True, 100, 10, Decimal("0.120000")),  # 100 * 1000e-6 + 10 * 2000e-6
    ]
    tenant_a.refresh_from_db()
    assert tenant_a.ai_credit_balance_usd == Decimal("99.880000")


def test_no_retry_on_400(fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None) -> None:
    fake_openai.script(fake_openai.error(400, "bad schema"))
    with pytest.raises(errors.BadRequest):
        generate(tenant_a, ask())
    assert len(fake_openai.chat_requests) == 1
    assert len(rows(tenant_a)) == 1


def test_429_retry_after_is_honoured(
    fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None
) -> None:
    fake_openai.script(fake_openai.error(429, retry_after="1"), ChatReply("ok"))
    started = time.monotonic()
    assert generate(tenant_a, ask()).text == "ok"
    assert time.monotonic() - started >= 0.95
    assert len(fake_openai.chat_requests) == 2


def test_per_attempt_timeout_and_total_deadline(
    fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None
) -> None:
    fake_openai.script(fake_openai.hang(30.0))
    policy = gateway.RetryPolicy(timeout_s=1.0, attempts=10, base_delay_s=0.01, deadline_s=1.5)
    started = time.monotonic()
    with pytest.raises(errors.Timeout):
        generate(tenant_a, ask(), retry=policy)
    assert time.monotonic() - started < 5  # 10 attempts of 1 s would take 10 s
    assert 2 <= len(rows(tenant_a)) <= 3


def test_stream_through_the_gateway_records_usage_from_the_final_chunk(
    fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None
) -> None:
    fake_openai.script(
        fake_openai.error(503),
        ChatReply("Abrimos a las 9.", chunk_delay=0.01, prompt_tokens=40, completion_tokens=5),
    )
    items = list(
        gateway.llm_stream(
            ask(),
            context=gateway.CallContext(tenant=tenant_a),
            provider=gateway.get_provider("openai"),
            retry=FAST,
        )
    )
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "Abrimos a las 9."
    ledger = rows(tenant_a)
    assert [(r.success, r.input_tokens, r.output_tokens) for r in ledger] == [
        (False, 0, 0),
        (True, 40, 5),
    ]


def test_no_credits_fails_before_calling_the_server(
    fake_openai: FakeOpenAI, tenant_a: Tenant, priced: None
) -> None:
    Tenant.objects.filter(pk=tenant_a.pk).update(ai_credit_balance_usd=Decimal("0"))
    with pytest.raises(errors.NoCredits):
        generate(tenant_a, ask())
    assert fake_openai.chat_requests == []


def test_offline_is_the_default_without_any_provider_configured(
    settings: Any, tenant_a: Tenant
) -> None:
    settings.GOOGLE_AI_API_KEY = None
    settings.OPENAI_BASE_URL = None
    result = gateway.llm_generate(ask(), context=gateway.CallContext(tenant=tenant_a))
    assert (result.provider, result.model) == ("offline", "offline")
    assert [(r.provider, r.cost_usd) for r in rows(tenant_a)] == [("offline", Decimal("0"))]


def test_the_offline_provider_answers_even_with_no_credits_left(
    settings: Any, tenant_a: Tenant
) -> None:
    settings.GOOGLE_AI_API_KEY = None
    settings.OPENAI_BASE_URL = None
    settings.AI_CREDITS_MODE = "enforce"
    Tenant.objects.filter(pk=tenant_a.pk).update(ai_credit_balance_usd=Decimal("0"))

    result = gateway.llm_generate(ask(), context=gateway.CallContext(tenant=tenant_a))

    assert result.provider == "offline"
    assert [(r.provider, r.success) for r in rows(tenant_a)] == [("offline", True)]
