"""`options` through the REST API: the reply carries the cleaned choices (bounded, unique,
2-10), the schema offers them to the model, an escalation or a single option carries none,
and the choice a client sends back in `metadata.option_id` is kept with the customer's text."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Message
from ai_agents.tests.conversations.support import (
    create_agent,
    push_answer,
    reply_metadata,
    send_message,
)
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle


@pytest.mark.django_db
def test_the_reply_carries_the_options_cleaned_and_stored_for_the_inbox(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    raw = [
        {"id": "a", "title": "  Recoger   en tienda "},
        {"id": "a", "title": "Envío"},  # a repeated id gets its own
        {"title": "envío"},  # a repeated title is dropped
        "Hablar con alguien",  # a bare string is a title
        {"title": "x" * 500, "description": "y" * 500},  # bounded
        {"description": "sin título"},  # dropped
    ] + [{"title": f"Más {n}"} for n in range(20)]
    push_answer(fake_google, "¿Cómo lo quiere?", options=raw)

    body = send_message(api_a, agent_id, "Quiero comprar").json()

    options = body["reply"]["options"]
    assert options[:3] == [
        {"id": "a", "title": "Recoger en tienda"},
        {"id": "opt-2", "title": "Envío"},
        {"id": "opt-3", "title": "Hablar con alguien"},
    ]
    assert len(options) == 10
    assert len(options[3]["title"]) == 72 and len(options[3]["description"]) == 72
    assert reply_metadata(api_a, body)["options"] == options  # the inbox shows them
    schema = fake_google.generate_requests[0]["generationConfig"]["responseSchema"]
    assert schema["properties"]["options"]["type"] == "ARRAY"
    system = fake_google.generate_requests[0]["systemInstruction"]["parts"][0]["text"]
    assert "options" in system


@pytest.mark.django_db
def test_one_option_or_an_escalation_carries_no_options(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Hecho.", options=[{"title": "Solo una"}])
    assert send_message(api_a, agent_id, "Hola").json()["reply"]["options"] == []

    fake_google.push(
        fake_google.reply_json(
            {"action": "escalate", "reason": "pide una persona", "options": [{"title": "A"}, "B"]}
        )
    )
    body = send_message(api_a, agent_id, "Quiero una persona").json()
    assert body["escalation"] is not None
    assert body["reply"]["options"] == []


@pytest.mark.django_db
def test_the_option_a_client_sends_back_is_kept_with_the_text(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Se lo enviamos.")
    response = send_message(api_a, agent_id, "Envío", metadata={"option_id": "delivery"})
    assert response.status_code == 200
    with tenant_scope(tenant_a):
        message = Message.objects.get(role="user")
    assert message.metadata["channel_metadata"] == {"option_id": "delivery"}
