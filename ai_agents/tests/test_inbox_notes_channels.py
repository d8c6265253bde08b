"""An internal note never reaches the customer: not on WhatsApp (the local Graph API fake
receives nothing for it, while a staff reply right after does go out) and not in the web chat
(the visitor's history holds the reply, never the note)."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Conversation
from ai_agents.tests.channels.webchat.support import Visitor, webchat_binding
from ai_agents.tests.channels.webchat.support import respond as webchat_respond
from ai_agents.tests.channels.whatsapp.support import Line
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

NOTE = "Nota interna: cliente difícil, no ofrecer descuento"


def _note_then_reply(client: Any, conversation: Conversation, run_tasks: Any) -> None:
    with run_tasks():
        assert (
            client.post(
                f"/api/v1/conversations/{conversation.pk}/claim", {}, format="json"
            ).status_code
            == 200
        )
        note = client.post(
            f"/api/v1/conversations/{conversation.pk}/notes", {"text": NOTE}, format="json"
        )
        assert note.status_code == 201
    with run_tasks():
        reply = client.post(
            f"/api/v1/conversations/{conversation.pk}/reply",
            {"text": "Le ayudo yo."},
            format="json",
        )
        assert reply.status_code == 200


@pytest.mark.django_db
def test_a_note_is_never_sent_on_whatsapp(line: Line, owner: Persona, owner_client: Any) -> None:
    line.customer_writes("Hola, ¿en qué le ayudo?")
    conversation = Conversation.objects.for_tenant(line.tenant).get()
    before = len(line.graph.sent)

    _note_then_reply(owner_client, conversation, line.run_tasks)

    bodies = [sent["text"]["body"] for sent in line.graph.sent[before:]]
    assert bodies == ["Le ayudo yo."]
    assert all(NOTE not in str(request.json()) for request in line.graph.requests)


@pytest.mark.django_db
def test_a_note_is_never_shown_in_the_web_chat(
    tenant_a: Any, owner: Persona, owner_client: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    binding = webchat_binding(tenant_a, "Lucía", ["https://shop.example"])
    visitor = Visitor(binding)
    visitor.start()
    webchat_respond(fake_google, "Hola, ¿en qué le ayudo?")
    assert visitor.say("hola").status_code == 200
    conversation = Conversation.objects.for_tenant(tenant_a).get()

    _note_then_reply(owner_client, conversation, run_tasks)

    history = visitor.history()
    assert history.status_code == 200
    texts = [m["text"] for m in history.json()["messages"]]
    assert "Le ayudo yo." in texts
    assert all(NOTE not in text for text in texts)
    assert NOTE not in history.content.decode()
