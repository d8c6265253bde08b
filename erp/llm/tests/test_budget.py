"""The tenant's monthly budget at the gateway: the cheaper model or no call at 100 %, the
owners told once at 80 % and once at 100 %, and one tenant's spend never another's."""

from __future__ import annotations

import zoneinfo
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from erp.llm.budget import budget_check, month_spend
from erp.llm.errors import BudgetExhausted, NoCredits
from erp.llm.gateway import CallContext, llm_generate, llm_media_text
from erp.llm.models import BudgetNotice, UsageLog
from erp.llm.providers.openai_compat import OpenAICompatProvider
from erp.llm.tests.google_kit import FAST, MODEL, ask
from erp.llm.types import MediaRequest
from erp.tenancy.models import Tenant
from erp.testing.factories import usage_spent
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_openai import FakeOpenAI

CHEAP = "gemini-2.5-flash-lite"


def _budget(tenant: Tenant, usd: str, action: str = "handoff_only", model: str = "") -> None:
    tenant.monthly_budget_usd = Decimal(usd)
    tenant.budget_action = action
    tenant.budget_cheaper_model = model
    tenant.save()


def _model_path(fake_google: FakeGoogle) -> str:
    [request] = [r for r in fake_google.requests if "generateContent" in r.path]
    return request.path


@pytest.mark.django_db
def test_cheaper_model_once_the_budget_is_spent(
    fake_google: FakeGoogle, tenant_a: Tenant, settings: Any
) -> None:
    settings.AI_CREDITS_MODE = "off"
    _budget(tenant_a, "10.00", "cheaper_model", CHEAP)
    usage_spent(tenant_a, "10")

    result = llm_generate(ask(), context=CallContext(tenant=tenant_a), retry=FAST)

    assert f"/models/{CHEAP}:generateContent" in _model_path(fake_google)
    assert result.text  # answered, not refused
    assert UsageLog.objects.for_tenant(tenant_a).filter(model=CHEAP).count() == 1


@pytest.mark.django_db
def test_below_the_budget_the_agent_model_is_used(
    fake_google: FakeGoogle, tenant_a: Tenant, settings: Any
) -> None:
    settings.AI_CREDITS_MODE = "off"
    _budget(tenant_a, "10.00", "cheaper_model", CHEAP)
    usage_spent(tenant_a, "9.99")

    llm_generate(ask(model=MODEL), context=CallContext(tenant=tenant_a), retry=FAST)

    assert f"/models/{MODEL}:generateContent" in _model_path(fake_google)


@pytest.mark.django_db
def test_handoff_only_refuses_the_call_as_no_credits(
    fake_google: FakeGoogle, tenant_a: Tenant, settings: Any
) -> None:
    settings.AI_CREDITS_MODE = "off"
    _budget(tenant_a, "5.00")
    usage_spent(tenant_a, "5")

    with pytest.raises(BudgetExhausted) as raised:
        llm_generate(ask(), context=CallContext(tenant=tenant_a), retry=FAST)

    assert isinstance(raised.value, NoCredits)  # every caller already handles it
    assert fake_google.generate_requests == []


@pytest.mark.django_db
def test_a_costed_row_adds_to_the_cached_spend_without_summing_again(
    tenant_a: Tenant, django_assert_num_queries: Any
) -> None:
    _budget(tenant_a, "100.00")
    usage_spent(tenant_a, "1.25")
    assert month_spend(tenant=tenant_a) == Decimal("1.25")  # summed once, then cached
    usage_spent(tenant_a, "2.50")
    with django_assert_num_queries(0):
        assert month_spend(tenant=tenant_a) == Decimal("3.75")


@pytest.mark.django_db
def test_handoff_only_refuses_reading_a_voice_note_too(
    fake_openai: FakeOpenAI, tenant_a: Tenant, settings: Any
) -> None:
    settings.AI_CREDITS_MODE = "off"
    _budget(tenant_a, "5.00")
    voice = MediaRequest(data=b"OggS", mime_type="audio/ogg", task="transcribe", prompt="T")
    context = CallContext(tenant=tenant_a, operation="transcription")
    provider = OpenAICompatProvider.from_settings()
    fake_openai.transcription_script = ["hola"]
    assert llm_media_text(voice, context=context, provider=provider, retry=FAST).text == "hola"

    usage_spent(tenant_a, "5")
    with pytest.raises(BudgetExhausted):
        llm_media_text(voice, context=context, provider=provider, retry=FAST)
    assert len(fake_openai.transcription_requests) == 1  # the spent budget made no call


@pytest.mark.django_db
def test_the_owners_are_told_once_at_80_and_once_at_100(
    tenant_a: Tenant, owner: Any, member: Any
) -> None:
    _budget(tenant_a, "10.00")
    usage_spent(tenant_a, "7.99")
    assert budget_check(tenant=tenant_a) is not None
    assert mail.outbox == []

    # when: a costed row crosses 80 % (the cached spend is forgotten on write)
    usage_spent(tenant_a, "0.01")
    for _call in range(3):
        budget_check(tenant=tenant_a)

    [eighty] = mail.outbox
    assert eighty.to == [owner.user.email]  # the owner, not the member
    assert "80 %" in eighty.subject and "8.00 USD de 10.00 USD" in eighty.body

    usage_spent(tenant_a, "2")
    for _call in range(3):
        state = budget_check(tenant=tenant_a)
    assert state is not None and state.exhausted
    assert len(mail.outbox) == 2
    assert "agotado" in mail.outbox[1].subject
    assert "pasan a una persona" in mail.outbox[1].body
    notices = BudgetNotice.objects.for_tenant(tenant_a).order_by("threshold")
    month = f"{timezone.localtime(timezone.now(), zoneinfo.ZoneInfo(tenant_a.timezone)):%Y-%m}"
    assert [(n.threshold, n.month) for n in notices] == [(80, month), (100, month)]


@pytest.mark.django_db
def test_one_tenants_spend_never_counts_toward_anothers_budget(
    fake_google: FakeGoogle, tenant_a: Tenant, tenant_b: Tenant, settings: Any
) -> None:
    settings.AI_CREDITS_MODE = "off"
    _budget(tenant_a, "5.00")
    _budget(tenant_b, "5.00")
    usage_spent(tenant_b, "50")

    assert month_spend(tenant=tenant_a) == Decimal("0")
    assert month_spend(tenant=tenant_b) == Decimal("50")
    llm_generate(ask(), context=CallContext(tenant=tenant_a), retry=FAST)  # not refused
    with pytest.raises(BudgetExhausted):
        llm_generate(ask(), context=CallContext(tenant=tenant_b), retry=FAST)
    assert BudgetNotice.objects.for_tenant(tenant_a).count() == 0
    assert BudgetNotice.objects.for_tenant(tenant_b).count() == 2
    assert len(fake_google.generate_requests) == 1


@pytest.mark.django_db
def test_jumping_past_100_sends_only_the_100_mail(tenant_a: Tenant, owner: Any) -> None:
    _budget(tenant_a, "10.00")
    usage_spent(tenant_a, "12")

    budget_check(tenant=tenant_a)
    budget_check(tenant=tenant_a)

    [mail_sent] = mail.outbox
    assert "agotado" in mail_sent.subject
    notices = BudgetNotice.objects.for_tenant(tenant_a).order_by("threshold")
    assert [(n.threshold, n.recipients) for n in notices] == [(80, []), (100, [owner.user.email])]


@pytest.mark.django_db
def test_the_notice_is_written_in_the_tenants_language(tenant_a: Tenant, owner: Any) -> None:
    Tenant.objects.filter(pk=tenant_a.pk).update(language="en")
    tenant_a.refresh_from_db()
    _budget(tenant_a, "10.00")
    usage_spent(tenant_a, "8.5")

    budget_check(tenant=tenant_a)

    [sent] = mail.outbox
    assert sent.subject == "AI budget at 80 %: Acme"
    assert sent.body.startswith("Spent this month (")
    assert "8.50 USD of 10.00 USD" in sent.body
