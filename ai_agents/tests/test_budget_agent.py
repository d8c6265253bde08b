"""An agent under a spent monthly budget (the tenant's setting): "cheaper_model" answers with
the cheaper model, "handoff_only" stores the message and passes it to a person with the
reason in words, never with the failure reply; another tenant's spend changes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation

from ai_agents.models import Conversation
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.tests.channels.whatsapp.support import Line, bot_reply, payload, post
from erp.tenancy.models import Tenant
from erp.testing.factories import usage_spent
from erp.testing.fake_google import FakeGoogle

CHEAP = "gemini-2.5-flash-lite"


def _budget(tenant: Tenant, action: str, *, spent: str, model: str = "") -> None:
    Tenant.objects.filter(pk=tenant.pk).update(
        monthly_budget_usd=Decimal("2.00"), budget_action=action, budget_cheaper_model=model
    )
    tenant.refresh_from_db()
    usage_spent(tenant, spent)


def _models_called(google: FakeGoogle) -> list[str]:
    paths = [r.path for r in google.requests if "generateContent" in r.path]
    return [path.rsplit("/", 1)[-1].split(":")[0] for path in paths]


@pytest.mark.django_db
def test_handoff_only_escalates_in_words_without_calling_the_model(line: Line) -> None:
    _budget(line.tenant, "handoff_only", spent="2.00")

    with line.run_tasks():
        post(line.client, payload("text"))

    conversation = Conversation.objects.for_tenant(line.tenant).get()
    reply = bot_reply(line.tenant)
    assert _models_called(line.google) == []
    assert conversation.status == "escalated"
    assert conversation.escalation_reason == "budget_exhausted"
    told = conversation_escalation(conversation)
    assert told is not None
    assert told["reason_label"] == "Se agotó el presupuesto mensual de IA"
    assert "presupuesto agotado" in str(told)
    with translation.override("en"):
        in_english = conversation_escalation(conversation)
    assert in_english is not None
    assert in_english["reason_label"] == "The monthly AI budget ran out"
    assert "budget exhausted" in str(in_english)
    # the customer reads the handoff message, not the failure reply
    assert reply.content == conversation.agent.escalation_message
    assert reply.content != conversation.agent.fallback_message
    assert [body["text"]["body"] for body in line.graph.sent] == [reply.content]


@pytest.mark.django_db
def test_cheaper_model_answers_with_the_cheaper_model(line: Line) -> None:
    _budget(line.tenant, "cheaper_model", spent="2.50", model=CHEAP)

    reply = line.customer_writes("Abrimos a las 9.")

    assert _models_called(line.google) == [CHEAP]
    assert reply.content == "Abrimos a las 9."
    assert Conversation.objects.for_tenant(line.tenant).get().status == "active"


@pytest.mark.django_db
def test_another_tenants_spend_does_not_count(line: Line, tenant_b: Tenant) -> None:
    _budget(line.tenant, "handoff_only", spent="1.00")
    usage_spent(tenant_b, "500")

    reply = line.customer_writes("Abrimos a las 9.")

    assert reply.content == "Abrimos a las 9."
    assert len(_models_called(line.google)) == 1
    assert Conversation.objects.for_tenant(line.tenant).get().status == "active"
