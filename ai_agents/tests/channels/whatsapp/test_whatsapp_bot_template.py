"""The bot's template once the 24-hour window closed: the owner picks it through the channels
API or the admin, which accept only an APPROVED synced template of the binding without
variables (its category taken from the synced row); at send time the synced rows decide again:
paused, removed or edited into one with variables in Meta, nothing is attempted, the reply is
recorded as not sent with the reason, and the team is told."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.test import Client

from ai_agents.models import ChannelBinding, Message
from ai_agents.tests.channels.admin_support import channel_admin_form
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_A,
    WA_ID,
    respond,
    stale_conversation,
)
from ai_agents.tests.channels.whatsapp.templates_support import (
    ORDER_UPDATE,
    SURVEY,
    TOKEN_A,
    WABA_A,
    account_ready,
)
from erp.llm.models import UsageLog
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import FakeGraph

pytestmark = pytest.mark.usefixtures("channel_prices")

PAUSED_SURVEY = FakeGraph.template(
    "encuesta", "¿Pudimos resolver su duda?", category="MARKETING", status="PAUSED"
)
SURVEY_WITH_NAME = FakeGraph.template(
    "encuesta", "Hola {{1}}, ¿pudimos resolver su duda?", category="MARKETING"
)


def _configure(api: Any, binding: ChannelBinding, template: Any) -> Any:
    return api.patch(
        f"/api/v1/channels/{binding.pk}", {"whatsapp_template": template}, format="json"
    )


def _resync(fake_graph: FakeGraph, binding: ChannelBinding, templates: list[Any]) -> None:
    from ai_agents.services.whatsapp_templates import whatsapp_templates_sync

    fake_graph.templates_put(WABA_A, templates, token=TOKEN_A, number=NUMBER_A)
    whatsapp_templates_sync(binding=binding)


def _late_bot_reply(client: Client, tenant: Any, fake_google: Any, run_tasks: Any) -> Message:
    """The customer wrote 25 hours ago; the bot's answer is due now (a worker was lost)."""
    from ai_agents.tasks import channel_conversation_answer

    conversation = stale_conversation(client, tenant, hours=25)
    respond(fake_google, "Su pedido sale mañana.")
    mail.outbox.clear()
    with run_tasks():
        channel_conversation_answer(str(conversation.pk))
    with tenant_scope(tenant):
        return Message.objects.get(role="assistant")


@pytest.mark.django_db
def test_the_api_takes_only_an_approved_synced_template_without_variables(
    api_a: Any, wa_binding: Any, fake_graph: FakeGraph
) -> None:
    unsynced = _configure(api_a, wa_binding, {"name": "encuesta", "language": "es"})
    assert unsynced.status_code == 400
    assert unsynced.json()["error"]["field"] == "whatsapp_template"
    assert "no está entre las plantillas sincronizadas" in unsynced.json()["error"]["message"]

    account_ready(fake_graph, wa_binding, [PAUSED_SURVEY, ORDER_UPDATE])
    paused = _configure(api_a, wa_binding, {"name": "encuesta", "language": "es"})
    assert "no está aprobada en Meta (estado: en pausa)" in paused.json()["error"]["message"]
    english = api_a.patch(
        f"/api/v1/channels/{wa_binding.pk}",
        {"whatsapp_template": {"name": "order_update", "language": "en_US"}},
        format="json",
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert english.status_code == 400
    assert "has variables the assistant cannot fill" in english.json()["error"]["message"]

    _resync(fake_graph, wa_binding, [SURVEY, ORDER_UPDATE])
    wrong = _configure(
        api_a, wa_binding, {"name": "encuesta", "language": "es", "category": "utility"}
    )
    assert "«marketing»" in wrong.json()["error"]["message"]
    taken = _configure(api_a, wa_binding, {"name": "encuesta", "language": "es"})
    assert taken.status_code == 200, taken.content
    expected = {"name": "encuesta", "language": "es", "category": "marketing"}
    assert taken.json()["whatsapp_template"] == expected

    # Paused later in Meta: the owner can still rename the channel (the send checks again).
    _resync(fake_graph, wa_binding, [PAUSED_SURVEY])
    renamed = api_a.patch(f"/api/v1/channels/{wa_binding.pk}", {"name": "Tienda"}, format="json")
    assert renamed.status_code == 200, renamed.content
    assert renamed.json()["whatsapp_template"] == expected


@pytest.mark.django_db
def test_the_admin_applies_the_same_rule(
    client: Client, owner: Any, wa_binding: Any, fake_graph: FakeGraph
) -> None:
    client.force_login(owner.user)
    url = f"/admin/ai_agents/channelbinding/{wa_binding.pk}/change/"

    def save(template: str) -> Any:
        return client.post(
            url,
            channel_admin_form(
                wa_binding.agent_id,
                type="whatsapp",
                phone_number_id=NUMBER_A,
                whatsapp_template=template,
            ),
        )

    refused = save('{"name": "encuesta", "language": "es"}')
    assert refused.status_code == 200
    assert "no está entre las plantillas sincronizadas" in refused.content.decode()

    account_ready(fake_graph, wa_binding, [SURVEY])
    assert save('{"name": "encuesta", "language": "es"}').status_code == 302
    with tenant_scope(wa_binding.tenant_id):
        wa_binding.refresh_from_db()
    assert wa_binding.whatsapp_template == {
        "name": "encuesta",
        "language": "es",
        "category": "marketing",
    }


@pytest.mark.django_db
def test_outside_the_window_the_bot_sends_its_approved_template_billed_by_its_category(
    client: Client,
    api_a: Any,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    fake_google: Any,
    run_tasks: Any,
) -> None:
    account_ready(fake_graph, wa_binding, [SURVEY])
    assert _configure(api_a, wa_binding, {"name": "encuesta", "language": "es"}).status_code == 200

    reply = _late_bot_reply(client, tenant_a, fake_google, run_tasks)

    assert reply.delivery_status == "sent"
    assert fake_graph.sent == [
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": WA_ID,
            "type": "template",
            "template": {"name": "encuesta", "language": {"code": "es"}},
        }
    ]
    [charge] = UsageLog.objects.for_tenant(tenant_a).filter(operation="channel_message")
    assert (charge.model, charge.cost_usd) == ("US/marketing", Decimal("0.025000"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("listed", "reason"),
    [
        ([PAUSED_SURVEY], "no está aprobada en Meta (estado: en pausa)"),
        ([], "ya no está en la cuenta de WhatsApp Business"),
        ([SURVEY_WITH_NAME], "tiene variables que el asistente no puede rellenar"),
    ],
    ids=["paused", "removed", "edited-with-variables"],
)
def test_a_template_the_bot_may_no_longer_send_is_not_attempted_and_the_team_told(
    client: Client,
    api_a: Any,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    fake_google: Any,
    run_tasks: Any,
    caplog: Any,
    owner: Any,  # the handoff notices' recipient
    listed: list[Any],
    reason: str,
) -> None:
    account_ready(fake_graph, wa_binding, [SURVEY])
    assert _configure(api_a, wa_binding, {"name": "encuesta", "language": "es"}).status_code == 200
    _resync(fake_graph, wa_binding, listed)  # what Meta says now

    reply = _late_bot_reply(client, tenant_a, fake_google, run_tasks)

    assert fake_graph.sent == []  # nothing attempted
    assert reply.delivery_status == "failed"
    error = reply.metadata["delivery_error"]
    assert error["code"] == "outside_24h_window"
    assert reason in error["message"]
    assert "whatsapp.outside_window" in caplog.text
    assert len(mail.outbox) == 1
    assert reason in mail.outbox[0].body


@pytest.mark.django_db
def test_the_api_and_the_admin_describe_the_same_rule() -> None:
    from django.utils import translation

    from ai_agents.admin_channels import ChannelBindingForm
    from ai_agents.api.channels import ChannelInputSerializer

    api_help = ChannelInputSerializer().fields["whatsapp_template"].help_text
    admin_help = ChannelBindingForm().fields["whatsapp_template"].help_text
    assert str(api_help) == str(admin_help)
    assert "sin variables" in str(admin_help)
    with translation.override("en"):
        assert "without variables" in str(admin_help)
