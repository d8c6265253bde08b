"""The team hears why, in words: the e-mail, the webhook and the inbox carry the reason, the
priority, what fired and a summary of the conversation (made by the model in the notifying task
when the agent has one, extractive otherwise), in the reader's language, never a raw code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core import mail
from django.test import Client

from ai_agents.models import Agent, Conversation, HandoffSettings
from ai_agents.services.agents import agent_create
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona

ASK_PERSON = [{"type": "user_request", "condition": {}, "priority": "high"}]
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}
MODEL_SUMMARY = "Ana pregunta cuándo sale su pedido 4411 y quiere hablar con una persona."


@pytest.fixture
def receiver(settings: Any) -> Iterator[FakeServer]:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True  # the fake receiver lives on loopback
    with FakeServer() as server:
        server.route("POST", r"/hooks/erp", FakeResponse.json({"ok": True}))
        yield server


def _agent(tenant: Any) -> Agent:
    return agent_create(
        tenant=tenant,
        data={
            "name": "Lucía",
            "system_prompt": "Eres Lucía.",
            "processing_config": FAST,
            "escalation_triggers": ASK_PERSON,
        },
    )


def _send(api: Any, agent: Agent, text: str) -> dict[str, Any]:
    response = api.post(
        f"/api/v1/agents/{agent.pk}/messages",
        {"contact": {"external_id": "c-1", "name": "Ana"}, "text": text},
        format="json",
    )
    assert response.status_code == 200, response.content
    return dict(response.json())


def _escalate_after_one_answer(
    api: Any, agent: Agent, fake: FakeGoogle, run_tasks: Any, *summary: Any
) -> str:
    """One answered question, then the request for a person (no model call: a rule); the
    notifying task meets `summary` (the fake model's behaviours for its call)."""
    fake.push(fake.reply_json({"action": "respond", "answer": "Sale mañana."}))
    _send(api, agent, "¿Cuándo sale mi pedido 4411?")
    fake.push(*summary)
    with run_tasks():
        body = _send(api, agent, "Quiero hablar con una persona")
    assert body["conversation_status"] == "escalated"
    return str(body["conversation_id"])


@pytest.mark.django_db
def test_the_model_summarises_for_the_team_outside_the_reply(
    owner: Persona, api_a: Any, fake_google: FakeGoogle, run_tasks: Any, receiver: FakeServer
) -> None:
    HandoffSettings.objects.for_tenant(owner.tenant).create(
        tenant=owner.tenant, webhook_url=f"{receiver.url}/hooks/erp"
    )
    agent = _agent(owner.tenant)
    summary = fake_google.reply(MODEL_SUMMARY)

    conversation_id = _escalate_after_one_answer(api_a, agent, fake_google, run_tasks, summary)

    asked = fake_google.generate_requests[-1]
    assert "Cliente: ¿Cuándo sale mi pedido 4411?" in json.dumps(asked, ensure_ascii=False)
    sent = mail.outbox[0]
    assert sent.subject == (
        "[Acme] Conversación escalada (prioridad Alta): El cliente pidió una persona"
    )
    assert "Motivo: El cliente pidió una persona" in sent.body
    assert "Detalle: el cliente pidió una persona («hablar con una persona»)" in sent.body
    assert "Disparador: Petición de una persona" in sent.body
    assert f"Resumen de la conversación:\n{MODEL_SUMMARY}" in sent.body
    assert "user_request" not in sent.subject + sent.body
    hook = receiver.requests[0].json()
    assert hook["reason"] == "user_request"  # the code stays for integrations
    assert hook["escalation"]["reason_label"] == "El cliente pidió una persona"
    assert hook["escalation"]["summary"] == MODEL_SUMMARY
    stored = Conversation.objects.unscoped().get(pk=conversation_id).escalation_info
    assert (stored["summary"], stored["summary_source"]) == (MODEL_SUMMARY, "model")


@pytest.mark.django_db
def test_a_failing_model_leaves_the_extractive_summary(
    owner: Persona, api_a: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    agent = _agent(owner.tenant)
    down = [fake_google.unavailable(), fake_google.unavailable()]

    conversation_id = _escalate_after_one_answer(api_a, agent, fake_google, run_tasks, *down)

    assert (
        "Resumen de la conversación:\n"
        "Cliente: ¿Cuándo sale mi pedido 4411?\n"
        "Asistente: Sale mañana.\n"
        "Cliente: Quiero hablar con una persona"
    ) in mail.outbox[0].body
    stored = Conversation.objects.unscoped().get(pk=conversation_id).escalation_info
    assert stored["summary_source"] == "extractive"


@pytest.mark.django_db
def test_each_tenant_hears_in_its_own_language_and_only_of_its_own(
    owner: Persona, outsider: Persona, api_a: Any, api_b: Any, run_tasks: Any
) -> None:
    outsider.tenant.language = "en"
    outsider.tenant.save(update_fields=["language"])
    with run_tasks():  # no model configured: the offline provider, extractive summaries
        _send(api_b, _agent(outsider.tenant), "I want to speak to a person about my refund")
        _send(api_a, _agent(owner.tenant), "Quiero hablar con una persona")

    by_recipient = {m.to[0]: m for m in mail.outbox}
    english = by_recipient[outsider.user.email]
    assert english.subject == (
        "[Globex] Conversation escalated (priority High): The customer asked for a person"
    )
    assert "Reason: The customer asked for a person" in english.body
    assert "Priority: High" in english.body
    assert "Conversation summary:\nCustomer: I want to speak to a person" in english.body
    spanish = by_recipient[owner.user.email]
    assert "Motivo: El cliente pidió una persona" in spanish.body
    assert "refund" not in spanish.body and "Quiero hablar" not in english.body


@pytest.mark.django_db
def test_the_inbox_shows_words_not_codes(
    owner: Persona, api_a: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    down = [fake_google.unavailable(), fake_google.unavailable()]
    conversation_id = _escalate_after_one_answer(
        api_a, _agent(owner.tenant), fake_google, run_tasks, *down
    )
    client = Client()
    client.force_login(owner.user)

    listing = client.get("/inbox/").content.decode()
    assert "El cliente pidió una persona" in listing and "Alta" in listing
    page = client.get(f"/inbox/{conversation_id}").content.decode()
    assert "El cliente pidió una persona" in page
    assert "Petición de una persona · Reglas de frases" in page
    assert "Cliente: ¿Cuándo sale mi pedido 4411?<br>Asistente: Sale mañana." in page
    assert "user_request" not in listing + page
    english = client.get(f"/inbox/{conversation_id}", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "The customer asked for a person" in english and "High" in english
    events = client.get(f"/inbox/{conversation_id}/events").json()["state"]
    assert events["reason_label"] == "El cliente pidió una persona"
    assert events["escalation"]["summary"].startswith("Cliente: ¿Cuándo sale")
