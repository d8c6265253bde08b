"""The optional follow-up: a tenant that opted in, an agent with a follow-up template, a
conversation the customer left unanswered whose window closes within the lead time: the
template goes once (never twice, not even under two beat runs at the same time), and only
then."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from ai_agents.models import (
    Contact,
    Conversation,
    FollowupSent,
    HandoffSettings,
    Message,
    TemplateFollowup,
    WhatsAppTemplate,
)
from ai_agents.services.whatsapp_followup import followups_due
from ai_agents.services.whatsapp_templates import approved_templates, whatsapp_templates_sync
from ai_agents.tests.channels.whatsapp.support import WA_ID, stale_conversation, wrote_hours_ago
from ai_agents.tests.channels.whatsapp.templates_support import (
    ORDER_UPDATE,
    SURVEY,
    TOKEN_A,
    WABA_A,
    account_ready,
)
from erp.celery import app
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_graph import FakeGraph

pytestmark = pytest.mark.usefixtures("channel_prices")


def _followup(binding: Any, tenant: Any, *, opted_in: bool = True) -> TemplateFollowup:
    with tenant_scope(tenant):
        HandoffSettings.objects.update_or_create(
            tenant=tenant, defaults={"whatsapp_followup": opted_in}
        )
        template = WhatsAppTemplate.objects.get(name="order_update")
        return TemplateFollowup.objects.create(
            tenant=tenant,
            agent=binding.agent,
            template=template,
            variables=["{nombre}", "#10423"],
            lead_minutes=60,
        )


def _bot_answers(conversation: Conversation) -> None:
    with tenant_scope(conversation.tenant_id):
        Message.objects.create(
            tenant_id=conversation.tenant_id,
            conversation=conversation,
            agent_id=conversation.agent_id,
            role=Message.Role.ASSISTANT,
            content="Su pedido sale mañana.",
            delivery_status="sent",
        )


def _due_soon(
    client: Client, binding: Any, fake_graph: FakeGraph
) -> tuple[TemplateFollowup, Conversation]:
    """Tenant A opted in with a follow-up of order_update; its customer wrote 23.5 hours ago
    and the bot answered: the follow-up is due."""
    account_ready(fake_graph, binding, [ORDER_UPDATE])
    config = _followup(binding, binding.tenant)
    conversation = stale_conversation(client, binding.tenant, hours=23.5)
    _bot_answers(conversation)
    return config, conversation


def _followups(tenant: Any) -> list[Message]:
    with tenant_scope(tenant):
        return list(Message.objects.filter(metadata__followup=True))


@pytest.fixture
def eager() -> Any:
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.mark.django_db
def test_the_follow_up_goes_once_and_only_when_due(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE, SURVEY])
    config = _followup(wa_binding, tenant_a, opted_in=False)
    conversation = stale_conversation(client, tenant_a, hours=23.5)

    with run_tasks():
        assert followups_due() == 0  # the tenant did not opt in
        HandoffSettings.objects.for_tenant(tenant_a).update(whatsapp_followup=True)
        assert followups_due() == 0  # the customer wrote last
        _bot_answers(conversation)
        wrote_hours_ago(conversation, 21)
        assert followups_due() == 0  # the window closes in 3 h: not yet
        wrote_hours_ago(conversation, 24.5)
        assert followups_due() == 0  # the window closed: too late
        wrote_hours_ago(conversation, 23.5)
        assert followups_due() == 1
        assert followups_due() == 0  # never twice

    [message] = _followups(tenant_a)
    assert message.content == "Hola Ana, su pedido #10423 ya salió."
    assert message.author_id is None and message.delivery_status == "sent"
    assert [(b["to"], b["type"], b["template"]["name"]) for b in fake_graph.sent] == [
        (WA_ID, "template", "order_update")
    ]
    assert fake_graph.sent[0]["template"]["components"][0]["parameters"][0]["text"] == "Ana"
    with tenant_scope(tenant_a):
        assert FollowupSent.objects.get().message_id == message.pk
    assert config.template.category == "utility"


@pytest.mark.django_db(transaction=True)
def test_two_beat_runs_at_once_send_one_follow_up(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, eager: Any
) -> None:
    _due_soon(client, wa_binding, fake_graph)
    gate = deadlines.barrier(2)
    counts: list[int] = []
    lock = threading.Lock()

    def beat() -> None:
        try:
            gate.wait()
            sent = followups_due()
        finally:
            connection.close()
        with lock:
            counts.append(sent)

    threads = [threading.Thread(target=beat) for _ in range(2)]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)

    assert sorted(counts) == [0, 1]
    assert len(_followups(tenant_a)) == 1
    assert [b["type"] for b in fake_graph.sent].count("template") == 1


@pytest.mark.django_db
def test_a_follow_up_takes_a_template_of_the_agents_own_channel_only(
    wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph
) -> None:
    from django.core.exceptions import ValidationError

    from ai_agents.services.agents import agent_create

    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    other = agent_create(tenant=tenant_a, data={"name": "Otro", "system_prompt": "Eres otro."})
    with tenant_scope(tenant_a):
        template = WhatsAppTemplate.objects.get()
        TemplateFollowup(tenant=tenant_a, agent=wa_binding.agent, template=template).clean()
        with pytest.raises(ValidationError) as refused:
            TemplateFollowup(tenant=tenant_a, agent=other, template=template).clean()

    assert refused.value.message_dict == {
        "template": ["La plantilla es de un canal de WhatsApp de otro agente."]
    }


@pytest.mark.django_db
@pytest.mark.parametrize("switched_off", ["agent", "channel"])
def test_no_follow_up_from_a_deactivated_agent_or_channel(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
    switched_off: str,
) -> None:
    """The owner switched the agent (or its WhatsApp channel) off: no template goes out to the
    customers of its conversations any more; switched on again, the follow-up goes."""
    _due_soon(client, wa_binding, fake_graph)
    row = wa_binding.agent if switched_off == "agent" else wa_binding
    row.is_active = False
    row.save(update_fields=["is_active"])

    with run_tasks():
        assert followups_due() == 0
    assert _followups(tenant_a) == []
    assert [b for b in fake_graph.sent if b.get("type") == "template"] == []

    row.is_active = True
    row.save(update_fields=["is_active"])
    with run_tasks():
        assert followups_due() == 1


@pytest.mark.django_db
def test_a_sync_that_misses_the_template_keeps_the_follow_up(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    """Meta no longer lists the template (or the owner typed a wrong WABA id): the template is
    kept as "no longer in Meta" (not offered, not sent) and the owner's follow-up survives;
    listed again, the follow-up goes again."""
    config, conversation = _due_soon(client, wa_binding, fake_graph)
    fake_graph.templates_put(WABA_A, [], token=TOKEN_A)

    assert whatsapp_templates_sync(binding=wa_binding).removed == 1

    with tenant_scope(tenant_a):
        assert TemplateFollowup.objects.get().pk == config.pk
        assert WhatsAppTemplate.objects.get().status == WhatsAppTemplate.Status.DELETED
    assert approved_templates(conversation) == []
    with run_tasks():
        assert followups_due() == 0
    assert whatsapp_templates_sync(binding=wa_binding).removed == 0  # counted once
    client.force_login(owner.user)
    admin_list = client.get("/admin/ai_agents/templatefollowup/").content.decode()
    assert "ya no está en Meta" in admin_list

    fake_graph.templates_put(WABA_A, [ORDER_UPDATE], token=TOKEN_A)
    whatsapp_templates_sync(binding=wa_binding)
    with run_tasks():
        assert followups_due() == 1


@pytest.mark.django_db
def test_a_contact_without_a_name_gets_a_neutral_word_in_the_templates_language(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    """ "{nombre}" of a customer whose profile has no name: the follow-up still goes, with the
    template language's neutral word ("customer" for en_US), once."""
    _, conversation = _due_soon(client, wa_binding, fake_graph)
    with tenant_scope(tenant_a):
        Contact.objects.filter(pk=conversation.contact_id).update(name="")

    with run_tasks():
        assert followups_due() == 1
        assert followups_due() == 0

    [message] = _followups(tenant_a)
    assert message.content == "Hola customer, su pedido #10423 ya salió."
    assert fake_graph.sent[0]["template"]["components"][0]["parameters"][0]["text"] == "customer"


@pytest.mark.django_db
def test_follow_up_values_are_put_on_one_line_as_meta_requires(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    """A name with a line break and a value with a tab and long spaces (Meta's 132018 would
    refuse them): sent on one line with single spaces, and delivered."""
    config, conversation = _due_soon(client, wa_binding, fake_graph)
    config.variables = ["{nombre}", "#10423\tlote      7"]
    config.save(update_fields=["variables"])
    with tenant_scope(tenant_a):
        Contact.objects.filter(pk=conversation.contact_id).update(name="Ana\n  María")

    with run_tasks():
        assert followups_due() == 1

    [message] = _followups(tenant_a)
    assert message.delivery_status == "sent"
    parameters = fake_graph.sent[0]["template"]["components"][0]["parameters"]
    assert [p["text"] for p in parameters] == ["Ana María", "#10423 lote 7"]
