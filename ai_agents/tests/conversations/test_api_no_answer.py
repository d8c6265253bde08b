"""When the bot does not know, through POST /api/v1/agents/{id}/messages: the offline provider
quotes only a confident passage and otherwise offers a person (es/en), a model says so with
`no_answer`, the reply records `outcome: no_answer`, and the customer's "sí" to the offer
escalates while "no gracias" keeps the bot. Two tenants: each answers from its own documents."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.services.knowledge import document_ingest, knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from ai_agents.tests.conversations.support import (
    create_agent,
    push_answer,
    reply_metadata,
    send_message,
    shipping_kb,
)
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle

NO_INFO = "No tengo esa información; ¿quiere que le pase con una persona del equipo?"
NO_INFO_EN = "I don't have that information; would you like me to put you through to a person"
CAKES = (
    "# Pasteles por encargo\n\nLos pasteles de boda se encargan con tres semanas de "
    "anticipación. Sabores:\n\n- Chocolate\n- Vainilla\n- Tres leches\n"
)


def cakes_kb(tenant: Tenant) -> Any:
    with tenant_scope(tenant):
        kb = knowledge_base_create(tenant=tenant, name="Pasteles")
        added = document_add(kb=kb, data=CAKES.encode(), filename="pasteles.md", enqueue=False)
        document_ingest(document=added.document)
    return kb


def offline_agent(api: Any, kb: Any, **extra: Any) -> str:
    return create_agent(api, provider="offline", knowledge_bases=[str(kb.pk)], **extra)


@pytest.mark.django_db
def test_offline_agents_quote_their_own_documents_and_refuse_what_they_do_not_cover(
    api_a: Any, api_b: Any, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    agent_a = offline_agent(api_a, shipping_kb(tenant_a))
    agent_b = offline_agent(api_b, cakes_kb(tenant_b))

    covered = send_message(api_a, agent_a, "¿Cuánto cuesta el envío?").json()
    assert covered["reply"]["text"].startswith("Esto es lo que encontré:\n\n")
    assert "El envío cuesta 4,95 euros" in covered["reply"]["text"]
    assert "envios.md" not in covered["reply"]["text"]
    assert covered["reply"]["citations"]
    assert "outcome" not in reply_metadata(api_a, covered)

    # Tenant A's documents say nothing about wedding cakes: B's are never searched for A.
    question = "¿Con cuánta anticipación se encarga un pastel de boda?"
    refused = send_message(api_a, agent_a, question).json()
    assert refused["reply"]["text"].startswith(NO_INFO)
    assert refused["reply"]["citations"] == []
    assert refused["escalation"] is None and refused["conversation_status"] == "active"
    assert reply_metadata(api_a, refused)["outcome"] == "no_answer"

    answered = send_message(api_b, agent_b, question).json()
    assert "tres semanas de anticipación" in answered["reply"]["text"]
    assert "- Chocolate\n- Vainilla\n- Tres leches" in answered["reply"]["text"]
    assert "outcome" not in reply_metadata(api_b, answered)


@pytest.mark.django_db
def test_plainly_unrelated_questions_are_refused_in_the_customers_language(
    api_a: Any, tenant_a: Tenant
) -> None:
    agent = offline_agent(api_a, shipping_kb(tenant_a))
    spanish = send_message(api_a, agent, "¿Quién ganó el partido de futbol anoche?").json()
    english = send_message(
        api_a, agent, "What is the capital of Australia?", contact={"external_id": "cli-2"}
    ).json()
    assert spanish["reply"]["text"].startswith(NO_INFO)
    assert english["reply"]["text"].startswith(NO_INFO_EN)
    assert reply_metadata(api_a, english)["outcome"] == "no_answer"


@pytest.mark.django_db
def test_accepting_the_offer_escalates_and_declining_keeps_the_bot(
    api_a: Any, api_b: Any, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    agent = offline_agent(api_a, shipping_kb(tenant_a), escalation_message="Le paso ahora.")
    first = send_message(api_a, agent, "¿Venden tamales?").json()
    assert first["reply"]["text"].startswith(NO_INFO)

    accepted = send_message(api_a, agent, "sí por favor").json()
    assert accepted["conversation_id"] == first["conversation_id"]
    assert accepted["conversation_status"] == "escalated"
    # The priority of the agent's user_request trigger (medium in the default config).
    assert accepted["escalation"] == {"reason": "user_request", "priority": "medium"}
    assert accepted["reply"]["text"] == "Le paso ahora."
    assert reply_metadata(api_a, accepted)["offer"] == "accepted"

    # Another tenant's customer declines: the bot stays, no escalation.
    agent_b = offline_agent(api_b, cakes_kb(tenant_b))
    send_message(api_b, agent_b, "¿Venden tamales?")
    declined = send_message(api_b, agent_b, "no gracias").json()
    assert declined["conversation_status"] == "active" and declined["escalation"] is None
    assert declined["reply"]["text"] == "De acuerdo. ¿En qué más le puedo ayudar?"
    again = send_message(api_b, agent_b, "¿Qué sabores de pastel tienen?").json()
    assert "Tres leches" in again["reply"]["text"]


@pytest.mark.django_db
def test_a_yes_that_answers_no_offer_is_not_an_escalation(api_a: Any, tenant_a: Tenant) -> None:
    agent = offline_agent(api_a, shipping_kb(tenant_a))
    send_message(api_a, agent, "¿Cuánto cuesta el envío?")
    body = send_message(api_a, agent, "sí").json()
    assert body["escalation"] is None and body["conversation_status"] == "active"


@pytest.mark.django_db
def test_an_english_customer_declining_gets_english(api_a: Any, tenant_a: Tenant) -> None:
    agent = offline_agent(api_a, shipping_kb(tenant_a))
    assert (
        send_message(api_a, agent, "Do you sell tamales?")
        .json()["reply"]["text"]
        .startswith(NO_INFO_EN)
    )
    declined = send_message(api_a, agent, "no thanks").json()
    assert declined["reply"]["text"] == "All right. What else can I help you with?"
    accepted = send_message(api_a, agent, "Do you sell gift cards?")
    assert send_message(api_a, agent, "yes please").json()["conversation_status"] == "escalated"
    assert accepted.status_code == 200


@pytest.mark.django_db
def test_a_model_saying_it_does_not_know_is_recorded_and_told_how(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent = create_agent(api_a, knowledge_bases=[str(shipping_kb(tenant_a).pk)])
    push_answer(fake_google, "No lo sé, ¿le paso con alguien?", no_answer=True, confidence=0.9)
    flagged = send_message(api_a, agent, "¿Venden tamales?").json()
    assert flagged["reply"]["text"] == "No lo sé, ¿le paso con alguien?"
    assert reply_metadata(api_a, flagged)["outcome"] == "no_answer"
    assert flagged["reply"]["citations"] == []

    system = fake_google.generate_requests[0]["systemInstruction"]["parts"][0]["text"]
    assert "no inventes" in system and "pon no_answer en true" in system
    schema = fake_google.generate_requests[0]["generationConfig"]
    assert "no_answer" in str(schema)

    # A model that ignores the field but says the sentence it was given is recorded too.
    push_answer(fake_google, NO_INFO, confidence=0.9)
    worded = send_message(api_a, agent, "¿Y tamales de elote?").json()
    assert reply_metadata(api_a, worded)["outcome"] == "no_answer"

    push_answer(fake_google, "El envío cuesta 4,95 euros.", no_answer=False, confidence=0.9)
    answered = send_message(api_a, agent, "¿Cuánto cuesta el envío?").json()
    assert "outcome" not in reply_metadata(api_a, answered)
    assert answered["reply"]["citations"]

    # The customer accepts the model's offer: escalated, no model call.
    calls = len(fake_google.generate_requests)
    push_answer(fake_google, "No tengo ese dato.", no_answer=True, confidence=0.9)
    send_message(api_a, agent, "¿Hacen pozole?")
    accepted = send_message(api_a, agent, "ok pásame").json()
    assert accepted["conversation_status"] == "escalated"
    assert accepted["escalation"]["reason"] == "user_request"
    assert len(fake_google.generate_requests) == calls + 1


@pytest.mark.django_db
def test_questions_the_documents_do_not_cover_in_a_row_are_no_loop(
    api_a: Any, tenant_a: Tenant
) -> None:
    """Two no-information answers in a row are the same text, but not the bot repeating itself
    (loop detection is on by default): a third, different question is still answered."""
    agent = offline_agent(api_a, shipping_kb(tenant_a))
    first = send_message(api_a, agent, "¿Venden tarjetas de regalo para cumpleaños?").json()
    second = send_message(api_a, agent, "¿Hacen descuentos a grupos escolares grandes?").json()
    assert second["conversation_id"] == first["conversation_id"]
    assert first["reply"]["text"].startswith(NO_INFO)
    assert second["reply"]["text"].startswith(NO_INFO)

    third = send_message(api_a, agent, "¿Cuánto cuesta el envío?")
    assert third.json()["escalation"] is None
    assert "El envío cuesta 4,95 euros" in third.json()["reply"]["text"]


@pytest.mark.django_db
def test_a_models_own_words_for_no_information_twice_are_no_loop(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    """The no-information answer is known by its recorded outcome, not by its wording: a model
    that paraphrases the sentence (flagging `no_answer`) twice in a row is not looping."""
    agent = create_agent(api_a, knowledge_bases=[str(shipping_kb(tenant_a).pk)])
    own_words = (
        "Lo siento, no dispongo de ese dato en mis documentos; ¿desea que le atienda alguien?"
    )
    for question in ("¿Venden tarjetas de regalo?", "¿Hacen descuentos a grupos escolares?"):
        push_answer(fake_google, own_words, no_answer=True, confidence=0.9)
        body = send_message(api_a, agent, question).json()
        assert body["reply"]["text"] == own_words and body["escalation"] is None

    push_answer(fake_google, "El envío cuesta 4,95 euros.", no_answer=False, confidence=0.9)
    third = send_message(api_a, agent, "¿Cuánto cuesta el envío?").json()
    assert third["escalation"] is None and third["conversation_status"] == "active"
    assert third["reply"]["text"] == "El envío cuesta 4,95 euros."
