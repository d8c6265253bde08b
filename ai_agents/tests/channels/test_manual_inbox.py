"""The spec's manual inbox: a channel whose agent is switched off still takes messages; they
wait in the staff inbox for a person (reason `agent_inactive`, the team told once), the bot
says nothing. A message to an unknown WhatsApp number stays logged and acknowledged."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client

from ai_agents.models import Conversation, Message
from ai_agents.services import handoff
from ai_agents.tests.channels.webchat.support import ORIGIN, Visitor, webchat_binding
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_B,
    binding_create,
    post,
    respond,
    text_payload,
    user_messages,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.fixtures import Persona


def _inbox(persona: Persona) -> str:
    client = Client()
    client.force_login(persona.user)
    return client.get("/inbox/").content.decode()


def _conversations(tenant: Any) -> list[Conversation]:
    with tenant_scope(tenant):
        return list(Conversation.objects.order_by("started_at"))


@pytest.mark.django_db
def test_whatsapp_messages_to_a_switched_off_agent_wait_in_its_tenants_inbox(
    client: Client,
    wa_binding: Any,
    owner: Persona,
    outsider: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    wa_binding.agent.is_active = False
    wa_binding.agent.save(update_fields=["is_active"])
    binding_create(outsider.tenant, NUMBER_B, token="EAAG-token-b")  # B's agent is on
    respond(fake_google, "Hola, soy el bot de Globex.")

    with run_tasks():
        assert post(client, text_payload("Hola, ¿abren mañana?", "wamid.m1")).status_code == 200
    with run_tasks():
        assert post(client, text_payload("¿Hay alguien?", "wamid.m2")).status_code == 200
    with run_tasks():
        post(client, text_payload("Hola Globex", "wamid.b1", number=NUMBER_B))

    [ours] = _conversations(owner.tenant)
    assert (ours.status, ours.escalation_reason) == ("escalated", "agent_inactive")
    assert [m.content for m in user_messages(owner.tenant)] == [
        "Hola, ¿abren mañana?",
        "¿Hay alguien?",
    ]
    with tenant_scope(owner.tenant):
        assert not Message.objects.filter(role="assistant").exists()  # the bot said nothing
    assert [m.to for m in mail.outbox] == [[owner.user.email]]  # told once, only its team
    assert f"/inbox/{ours.pk}" in mail.outbox[0].body
    assert f'data-conversation-id="{ours.pk}"' in _inbox(owner)
    assert str(ours.pk) not in _inbox(outsider)
    # Tenant B's agent is on: it answers, nothing waits in B's inbox.
    [theirs] = _conversations(outsider.tenant)
    assert theirs.status == "active"
    sent = [r.json()["text"]["body"] for r in fake_graph.requests if "text" in r.json()]
    assert sent == ["Hola, soy el bot de Globex."]


@pytest.mark.django_db
def test_a_web_chat_of_a_switched_off_agent_takes_messages_a_person_answers(
    owner: Persona, tenant_b: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    cache.clear()  # per-IP counters
    binding = webchat_binding(owner.tenant, "Lucía", [ORIGIN])
    binding.agent.is_active = False
    binding.agent.save(update_fields=["is_active"])
    visitor = Visitor(binding)
    assert visitor.start().status_code == 200

    with run_tasks():
        said = visitor.say("¿Tienen la talla 42?")

    assert said.status_code == 200, said.content
    assert fake_google.generate_requests == []
    [conversation] = _conversations(owner.tenant)
    assert (conversation.status, conversation.escalation_reason) == ("escalated", "agent_inactive")
    assert len(mail.outbox) == 1
    handoff.conversation_claim(conversation, owner.user)
    handoff.conversation_reply(conversation, owner.user, "Sí, nos quedan dos pares.")
    texts = [m["text"] for m in visitor.history().json()["messages"]]
    assert texts == [
        "¿Tienen la talla 42?",
        "Una persona del equipo le atiende a partir de ahora.",  # the takeover notice
        "Sí, nos quedan dos pares.",
    ]
    assert _conversations(tenant_b) == []


@pytest.mark.django_db
def test_a_message_to_an_unknown_whatsapp_number_is_logged_and_acknowledged(
    client: Client, wa_binding: Any, tenant_a: Any, caplog: Any, run_tasks: Any
) -> None:
    with run_tasks():
        response = post(client, text_payload("hola", "wamid.x1", number="34999000111"))

    assert response.status_code == 200
    assert "whatsapp.unknown_number" in caplog.text
    assert user_messages(tenant_a) == [] and _conversations(tenant_a) == []
    assert mail.outbox == []
