"""The message pipeline end to end through POST /api/v1/agents/{id}/messages, against the
fake Gemini server (real Postgres, real gateway, real google-genai client): answers, the
knowledge they come from and the context the model is given."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Contact, Conversation
from ai_agents.tests.conversations.support import (
    FAST,
    create_agent,
    push_answer,
    send_message,
    shipping_kb,
)
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle


@pytest.mark.django_db
def test_answer_with_citations_from_the_agents_knowledge_base(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    kb = shipping_kb(tenant_a)
    agent_id = create_agent(api_a, knowledge_bases=[str(kb.pk)])
    push_answer(fake_google, "El envío cuesta 4,95 euros.", intent="pricing", confidence=0.9)

    response = send_message(api_a, agent_id, "¿Cuánto cuesta el envío?")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reply"]["text"] == "El envío cuesta 4,95 euros."
    assert body["conversation_status"] == "active"
    assert body["escalation"] is None
    assert body["reply"]["citations"], body
    assert body["reply"]["citations"][0]["title"] == "envios.md"
    assert body["usage"] == {
        "input_tokens": 12,
        "output_tokens": 7,
        "cost_usd": body["usage"]["cost_usd"],
    }
    sent = fake_google.generate_requests[0]
    system = sent["systemInstruction"]["parts"][0]["text"]
    assert "Eres Lucía, asistente de " + tenant_a.name in system
    assert "Cliente: Ana." in system
    assert "4,95 euros" in system  # the retrieved passage is in the prompt

    detail = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    reply = detail["messages"][1]
    assert reply["rag_chunks_used"] == [c["chunk_id"] for c in body["reply"]["citations"]]
    assert reply["rag_search_time_ms"] is not None
    assert reply["metadata"]["model_used"]
    assert reply["metadata"]["intent_detected"] == "pricing"
    assert set(reply["metadata"]["timings_ms"]) >= {
        "receive",
        "context",
        "retrieve",
        "llm",
        "finish",
    }

    # The second message carries the first exchange as history.
    push_answer(fake_google, "De nada.")
    assert (
        send_message(api_a, agent_id, "Gracias").json()["conversation_id"]
        == body["conversation_id"]
    )
    contents = fake_google.generate_requests[1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]


@pytest.mark.django_db
def test_chunks_given_to_the_model_are_recorded_even_when_its_answer_is_escalated(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    kb = shipping_kb(tenant_a)
    agent_id = create_agent(api_a, knowledge_bases=[str(kb.pk)])
    push_answer(fake_google, "Creo que 4,95.", confidence=0.1)  # low confidence: escalates

    body = send_message(api_a, agent_id, "¿Cuánto cuesta el envío?").json()

    assert body["escalation"]["reason"] == "low_confidence"
    assert body["reply"]["citations"] == []  # the escalation message cites nothing
    reply = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()["messages"][1]
    assert reply["rag_chunks_used"]  # but the model was given the passages
    assert reply["rag_search_time_ms"] is not None


@pytest.mark.django_db
def test_the_model_is_told_the_time_business_customer_and_session_even_if_the_prompt_is_silent(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a, system_prompt="Eres un asistente amable.")
    push_answer(fake_google, "Hola, Ana.")
    contact = {
        "external_id": "cli-9",
        "name": "Ana",
        "email": "ana@cliente.es",
        "phone": "+34600111222",
    }
    first = api_a.post(
        f"/api/v1/agents/{agent_id}/messages",
        {"contact": contact, "text": "Hola"},
        format="json",
    ).json()
    with tenant_scope(tenant_a):
        conversation = Conversation.objects.get(pk=first["conversation_id"])
        Contact.objects.filter(pk=conversation.contact_id).update(custom_attributes={"vip": True})
        Conversation.objects.filter(pk=conversation.pk).update(session_variables={"pedido": "A-17"})
    push_answer(fake_google, "Su pedido A-17 sale hoy.")
    api_a.post(
        f"/api/v1/agents/{agent_id}/messages",
        {"contact": contact, "text": "¿Y mi pedido?"},
        format="json",
    )

    before, after = (
        r["systemInstruction"]["parts"][0]["text"] for r in fake_google.generate_requests
    )
    assert before.startswith("Eres un asistente amable.\n\n## Contexto:\n- Fecha y hora: ")
    assert f"({tenant_a.timezone})" in before
    assert f"- Empresa: {tenant_a.name}; agente: Lucía" in before
    assert "- Cliente: nombre: Ana, correo: ana@cliente.es, teléfono: +34600111222" in before
    assert "Variables" not in before
    assert 'teléfono: +34600111222; datos: {"vip": true}' in after
    assert '- Variables de la conversación: {"pedido": "A-17"}' in after


@pytest.mark.django_db
def test_a_slow_paid_query_embedding_is_bounded_by_rag_timeout_and_attributed(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    """The query embedding of a Google knowledge base counts against `rag_timeout_ms`: when it
    hangs, full-text search answers alone in time; its usage row names agent and conversation."""
    import time

    kb = shipping_kb(tenant_a, embedding_provider="google")
    agent_id = create_agent(
        api_a, knowledge_bases=[str(kb.pk)], processing_config={**FAST, "rag_timeout_ms": 400}
    )
    fake_google.push_embed(FakeGoogle.hang(30), FakeGoogle.hang(30))
    push_answer(fake_google, "El envío cuesta 4,95 euros.")

    started = time.monotonic()
    body = send_message(api_a, agent_id, "¿Cuánto cuesta el envío?").json()

    assert time.monotonic() - started < 5  # the embedding would take 30 s
    assert body["reply"]["text"] == "El envío cuesta 4,95 euros."
    system = fake_google.generate_requests[0]["systemInstruction"]["parts"][0]["text"]
    assert "4,95 euros" in system  # found by full text alone
    rows = UsageLog.objects.for_tenant(tenant_a).filter(
        operation="embedding", conversation_id=body["conversation_id"]
    )
    assert rows.exists() and not any(row.success for row in rows)
    assert {str(row.agent_id) for row in rows} == {agent_id}


@pytest.mark.django_db
def test_demo_agent_answers_offline_from_the_demo_knowledge_base(settings: Any) -> None:
    from ai_agents.demo import DEMO_AGENT_NAME
    from ai_agents.models import Agent
    from erp.demo import demo_load
    from erp.llm.providers.offline import OFFLINE_LABEL
    from erp.testing.fixtures import api_client_for

    settings.AI_CREDITS_MODE = "off"  # as in the embedded demo run
    login = demo_load()
    demo_load()  # idempotent
    [agent] = Agent.objects.for_tenant(login.tenant).filter(name=DEMO_AGENT_NAME)
    api = api_client_for(login.tenant)
    body = send_message(api, str(agent.pk), "¿A qué hora abren los sábados?").json()
    assert OFFLINE_LABEL in body["reply"]["text"]
    assert body["reply"]["citations"]
    assert body["usage"] == {"input_tokens": 0, "output_tokens": 0, "cost_usd": "0.000000"}


@pytest.mark.django_db
def test_retrieval_timeout_answers_without_chunks(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, monkeypatch: Any
) -> None:
    """`rag_timeout_ms` is a real statement timeout: a search slower than it (pg_sleep added
    to the search statement) is cancelled by PostgreSQL, rolled back to its savepoint, and
    the answer goes on without chunks in the same transaction."""
    from ai_agents.selectors import knowledge

    kb = shipping_kb(tenant_a)
    agent_id = create_agent(
        api_a, knowledge_bases=[str(kb.pk)], processing_config={**FAST, "rag_timeout_ms": 50}
    )
    real = knowledge._search_statement

    def slow(**kwargs: Any) -> tuple[str, dict[str, Any]]:
        sql, params = real(**kwargs)
        return f"SELECT found.* FROM ({sql}) found, (SELECT pg_sleep(5)) slow", params

    monkeypatch.setattr(knowledge, "_search_statement", slow)
    push_answer(fake_google, "No lo sé seguro.")

    response = send_message(api_a, agent_id, "¿Cuánto cuesta el envío?")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reply"]["text"] == "No lo sé seguro."
    assert body["reply"]["citations"] == []
    system = fake_google.generate_requests[0]["systemInstruction"]["parts"][0]["text"]
    assert "4,95 euros" not in system  # no passage reached the prompt
    detail = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()
    reply = detail["messages"][1]
    assert reply["rag_chunks_used"] in (None, [])
    assert 50 <= reply["rag_search_time_ms"] < 5000
    assert detail["message_count"] == 2

    monkeypatch.setattr(knowledge, "_search_statement", real)
    push_answer(fake_google, "El envío cuesta 4,95 euros.")
    # (Asked in other words: the same question twice is a loop since issue 15.)
    again = send_message(api_a, agent_id, "¿Y qué precio tiene el envío?").json()
    assert again["reply"]["citations"]  # the connection is fine afterwards


@pytest.mark.django_db
def test_the_demo_has_a_web_chat_its_staff_can_open(settings: Any) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from ai_agents.models import ChannelBinding
    from erp.demo import demo_load

    login = demo_load()
    demo_load()  # idempotent: still one web chat
    [binding] = ChannelBinding.objects.for_tenant(login.tenant).filter(type="webchat")
    assert binding.agent.name == "Asistente de la panadería"
    staff = Client()
    staff.force_login(get_user_model().objects.get(email=login.email))
    page = staff.get("/webchat/demo")
    assert page.status_code == 200
    assert f'data-key="{binding.token}"' in page.content.decode()
