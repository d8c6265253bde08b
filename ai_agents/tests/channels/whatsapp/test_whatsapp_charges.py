"""What WhatsApp bills for our replies lands in the usage ledger once per message sent: a
"service" row inside the 24-hour window, the template's category outside it, priced by the
customer's country; redelivered webhooks and retried sends never bill twice."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from ai_agents.conversations.delivery import reply_deliver
from ai_agents.models import Conversation, Message
from ai_agents.tests.channels.whatsapp.support import (
    post,
    staff_reply,
    stale_conversation,
    text_payload,
    worker_env,
)
from ai_agents.tests.channels.whatsapp.templates_support import bot_template_set
from erp.llm.models import UsageLog
from erp.testing.celery_worker import worker_running
from erp.testing.deadlines import wait_until
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.fake_http import FakeResponse

MEXICO = "5215512345678"

# The seed rates (not a transactional test's flushed table).
pytestmark = pytest.mark.usefixtures("channel_prices")


def _charges(tenant: Any) -> list[UsageLog]:
    return list(
        UsageLog.objects.for_tenant(tenant).filter(operation="channel_message").order_by("model")
    )


@pytest.mark.slow
def test_one_charge_per_reply_under_webhook_redelivery_with_a_real_worker(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    client: Client,
) -> None:
    # given: a worker on the fake model and Graph API, and a Mexican customer
    fake_google.default = fake_google.reply_json({"action": "respond", "answer": "Sí, a las 9."})
    payload = text_payload("¿Abren hoy?", "wamid.mx-1", wa_id=MEXICO)
    with worker_running(tmp_path, **worker_env(fake_google, fake_graph)):
        # when: Meta delivers the same webhook three times
        for _delivery in range(3):
            assert post(client, payload).status_code == 200
        wait_until(lambda: len(fake_graph.sent) >= 1, what="the reply at Graph", timeout=60)
        wait_until(lambda: len(_charges(tenant_a)) >= 1, what="the charge row", timeout=30)
        time.sleep(1.0)  # a second reply or charge would be there by now

    # then: one reply, one "service" charge at the MX rate, tied to the conversation
    assert len(fake_graph.sent) == 1
    [charge] = _charges(tenant_a)
    conversation = Conversation.objects.for_tenant(tenant_a).get()
    reply = Message.objects.for_tenant(tenant_a).get(role=Message.Role.ASSISTANT)
    assert (charge.provider, charge.model, charge.cost_usd) == (
        "whatsapp",
        "MX/service",
        Decimal("0.008500"),
    )
    assert (charge.conversation_id, charge.message_id) == (conversation.pk, reply.pk)
    assert charge.agent_id == conversation.agent_id


@pytest.mark.django_db
def test_a_retried_send_and_a_second_delivery_run_bill_once(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    conversation = stale_conversation(client, tenant_a, hours=1)
    message = staff_reply(conversation, owner.user, "Ya está en camino.")
    fake_graph.push(FakeResponse.json({"error": {"code": 2, "message": "busy"}}, status=503))

    assert reply_deliver(message.pk) == "sent"
    reply_deliver(message.pk)  # the task ran again (a retry after a lost ack)

    assert len(fake_graph.sent) == 2  # the 503 and the success: one message delivered
    [charge] = _charges(tenant_a)
    assert (charge.model, charge.cost_usd, charge.message_id) == (
        "US/service",
        Decimal("0.004000"),
        message.pk,
    )


@pytest.mark.django_db
def test_outside_the_window_the_template_is_billed_by_its_category(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    promo = FakeGraph.template("promo", "Tenemos ofertas.", category="MARKETING")
    bot_template_set(fake_graph, wa_binding, promo)  # its category comes from the synced row
    conversation = stale_conversation(client, tenant_a, hours=30)
    message = staff_reply(conversation, owner.user, "Tenemos ofertas.")

    assert reply_deliver(message.pk) == "sent"

    assert fake_graph.sent[0]["type"] == "template"
    assert "category" not in fake_graph.sent[0]["template"]  # Graph gets no extra field
    [charge] = _charges(tenant_a)
    assert (charge.model, charge.cost_usd) == ("US/marketing", Decimal("0.025000"))


@pytest.mark.django_db
def test_a_failed_send_is_not_billed(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    conversation = stale_conversation(client, tenant_a, hours=1)
    message = staff_reply(conversation, owner.user, "Hola.")
    fake_graph.push(FakeResponse.json({"error": {"code": 131026, "message": "x"}}, status=400))

    assert reply_deliver(message.pk) == "failed"
    assert _charges(tenant_a) == []
