"""What the staff see of an answer's `options`: small numbered chips under the bot's message in
the inbox (only in its own tenant's conversation page), and the options in the playground."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import Conversation, Message
from ai_agents.tests.conversations.support import create_agent
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

OPTIONS = [{"id": "sat", "title": "Sábado por la mañana"}, {"id": "sun", "title": "Domingo"}]


def _bot_answer(conversation: Conversation) -> Message:
    return Message.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id,
        conversation=conversation,
        agent=conversation.agent,
        role="assistant",
        content="¿Qué día le va mejor?",
        metadata={"options": OPTIONS},
        created_at=timezone.now(),
    )


def _client(persona: Persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


@pytest.mark.django_db
def test_the_inbox_shows_the_options_offered_under_the_bot_answer(
    owner: Persona, outsider: Persona
) -> None:
    ours = conversation_make(agent_for(owner.tenant), thread="ana", status="active")
    _bot_answer(ours)

    html = _client(owner).get(f"/inbox/{ours.pk}").content.decode()
    assert '<ol class="options" aria-label="Opciones ofrecidas">' in html
    # numbered as the customer may type them: "2" chooses "Domingo"
    assert "<li>1. Sábado por la mañana</li><li>2. Domingo</li>" in html
    assert _client(outsider).get(f"/inbox/{ours.pk}").status_code == 404


@pytest.mark.django_db
def test_the_playground_shows_the_options_the_model_offered(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": "¿Qué día?", "options": OPTIONS})
    )
    body = api_a.post(f"/api/v1/agents/{agent_id}/test", {"text": "Cita"}, format="json").json()
    assert body["reply"] == "¿Qué día?"
    assert body["options"] == OPTIONS
