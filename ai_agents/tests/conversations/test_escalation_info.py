"""After an escalation: the reason in words (API `escalation` object, es/en) stored with the
status, and model failures that escalate only after `failures_before_escalation` in a row."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Conversation
from ai_agents.services.handoff_notify import EVENT_ESCALATED, notice_build
from ai_agents.tests.conversations.support import (
    FAST,
    create_agent,
    push_answer,
    send_message,
)
from erp.testing.fake_google import FakeGoogle

ASK_PERSON = [{"type": "user_request", "condition": {}, "priority": "high"}]
NO_RETRY = {**FAST, "llm_max_retries": 0}


def _detail(api: Any, conversation_id: str, language: str = "es") -> dict[str, Any]:
    response = api.get(f"/api/v1/conversations/{conversation_id}", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, response.content
    return dict(response.json())


@pytest.mark.django_db
def test_the_api_tells_why_in_words_in_spanish_and_english_per_tenant(
    api_a: Any, api_b: Any, fake_google: FakeGoogle
) -> None:
    agent_a = create_agent(api_a, escalation_triggers=ASK_PERSON)
    push_answer(fake_google, "Su pedido 4411 sale mañana.")
    send_message(api_a, agent_a, "¿Cuándo sale mi pedido 4411?")
    hit = send_message(api_a, agent_a, "Quiero hablar con una persona").json()
    assert hit["escalation"] == {"reason": "user_request", "priority": "high"}

    es = _detail(api_a, hit["conversation_id"])["escalation"]
    assert es["reason"] == "user_request"
    assert es["reason_label"] == "El cliente pidió una persona"
    assert (es["priority"], es["priority_label"]) == ("high", "Alta")
    assert (es["trigger"], es["layer"]) == ("user_request", "rules")
    assert "hablar con una persona" in es["detail"]
    assert es["summary"] == (
        "Cliente: ¿Cuándo sale mi pedido 4411?\n"
        "Asistente: Su pedido 4411 sale mañana.\n"
        "Cliente: Quiero hablar con una persona"
    )
    assert es["at"]
    en = _detail(api_a, hit["conversation_id"], "en")["escalation"]
    assert (en["reason_label"], en["priority_label"]) == ("The customer asked for a person", "High")
    assert en["trigger_label"] == "Request for a person"

    # Tenant B sees neither A's conversation nor its reason; its own speaks for itself.
    assert api_b.get(f"/api/v1/conversations/{hit['conversation_id']}").status_code == 404
    agent_b = create_agent(
        api_b,
        escalation_triggers=[
            {"type": "keyword", "condition": {"keywords": ["reclamación"]}, "priority": "urgent"}
        ],
    )
    theirs = send_message(api_b, agent_b, "Quiero poner una reclamación").json()
    listed = api_b.get("/api/v1/conversations?status=escalated").json()["results"]
    assert [c["id"] for c in listed] == [theirs["conversation_id"]]
    escalation = listed[0]["escalation"]
    assert escalation["reason_label"] == "El mensaje contiene una palabra clave configurada"
    assert escalation["priority_label"] == "Urgente"
    assert "reclamación" in escalation["detail"]
    quiet = send_message(api_a, create_agent(api_a), "Hola").json()
    assert _detail(api_a, quiet["conversation_id"])["escalation"] is None


@pytest.mark.django_db
def test_the_model_stating_its_reason_is_kept(api_a: Any, fake_google: FakeGoogle) -> None:
    agent_id = create_agent(
        api_a, escalation_triggers=[], intent_detection={"mode": "llm", "intents": []}
    )
    fake_google.push(
        fake_google.reply_json({"action": "escalate", "reason": "pide un reembolso de 2019"})
    )
    body = send_message(api_a, agent_id, "Necesito el reembolso de una factura de 2019").json()
    escalation = _detail(api_a, body["conversation_id"], "en")["escalation"]
    assert escalation["reason_label"] == "The AI assistant decided to hand over to a person"
    assert escalation["detail"] == "pide un reembolso de 2019"
    assert (escalation["trigger"], escalation["layer"]) == ("model", "model")


@pytest.mark.django_db
def test_one_failure_keeps_the_bot_two_in_a_row_escalate_and_a_success_resets(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a, fallback_message="Ahora no puedo.", processing_config=NO_RETRY)

    fake_google.push(fake_google.unavailable())
    first = send_message(api_a, agent_id, "¿Abren mañana?").json()
    assert first["reply"]["text"] == "Ahora no puedo."  # the fallback went out
    assert (first["escalation"], first["conversation_status"]) == (None, "active")
    conversation = Conversation.objects.unscoped().get(pk=first["conversation_id"])
    assert conversation.model_failures == 1

    push_answer(fake_google, "Sí, de 9 a 14.")  # the bot keeps answering; the count resets
    assert send_message(api_a, agent_id, "¿Abren mañana?").json()["reply"]["text"] == (
        "Sí, de 9 a 14."
    )
    conversation.refresh_from_db()
    assert conversation.model_failures == 0

    fake_google.push(fake_google.unavailable())
    again = send_message(api_a, agent_id, "¿Y el sábado?").json()
    assert (again["escalation"], again["conversation_status"]) == (None, "active")

    fake_google.push(fake_google.unavailable())
    second = send_message(api_a, agent_id, "¿Y el domingo?").json()
    assert second["reply"]["text"] == "Ahora no puedo."
    assert second["escalation"] == {"reason": "llm_failure", "priority": "high"}
    assert second["conversation_status"] == "escalated"
    escalation = _detail(api_a, second["conversation_id"])["escalation"]
    assert escalation["reason_label"] == "El modelo de IA falló varias veces"
    assert "2 fallos seguidos" in escalation["detail"]
    assert escalation["layer_label"] == "Fallo del servicio de IA"
    conversation.refresh_from_db()
    assert conversation.model_failures == 0  # a person takes it; counting starts again after


@pytest.mark.django_db
def test_failures_count_per_conversation_and_tenant(
    api_a: Any, api_b: Any, fake_google: FakeGoogle
) -> None:
    agent_a = create_agent(api_a, processing_config=NO_RETRY)
    agent_b = create_agent(api_b, processing_config=NO_RETRY)
    fake_google.push(*[fake_google.unavailable() for _ in range(3)])

    assert send_message(api_a, agent_a, "Hola").json()["escalation"] is None
    assert send_message(api_b, agent_b, "Hola").json()["escalation"] is None
    second_a = send_message(api_a, agent_a, "¿Abren mañana?").json()

    assert second_a["escalation"]["reason"] == "llm_failure"
    b = api_b.get("/api/v1/conversations").json()["results"]
    assert [(c["status"], c["escalation"]) for c in b] == [("active", None)]


@pytest.mark.django_db
def test_the_failure_threshold_is_a_validated_setting(api_a: Any, fake_google: FakeGoogle) -> None:
    for bad in (0, 11, "2", True):
        response = api_a.post(
            "/api/v1/agents",
            {
                "name": "X",
                "system_prompt": "Eres X.",
                "processing_config": {"failures_before_escalation": bad},
            },
            format="json",
        )
        assert response.status_code == 400, bad
        assert "failures_before_escalation" in str(response.json())
    agent_id = create_agent(api_a, processing_config={**NO_RETRY, "failures_before_escalation": 1})
    fake_google.push(fake_google.unavailable())
    assert send_message(api_a, agent_id, "Hola").json()["escalation"]["reason"] == "llm_failure"


@pytest.mark.django_db
def test_the_detail_is_kept_as_parts_and_worded_in_the_readers_language(
    api_a: Any, api_b: Any, tenant_b: Any, fake_google: FakeGoogle
) -> None:
    """The engine runs in Spanish; an English reader (API, the tenant's notice e-mail) reads
    the detail in English, nested details (failures in a row) too; a row stored before the
    parts existed (a plain text) still reads."""
    agent_a = create_agent(
        api_a,
        escalation_triggers=[
            {"type": "keyword", "condition": {"keywords": ["reclamación"]}, "priority": "urgent"}
        ],
    )
    hit = send_message(api_a, agent_a, "Quiero poner una reclamación").json()
    stored = Conversation.objects.unscoped().get(pk=hit["conversation_id"])
    assert stored.escalation_info["detail"] == {
        "template": "palabra clave «%(kw)s»",
        "parts": {"kw": "reclamación"},
    }
    assert _detail(api_a, hit["conversation_id"])["escalation"]["detail"] == (
        "palabra clave «reclamación»"
    )
    assert _detail(api_a, hit["conversation_id"], "en")["escalation"]["detail"] == (
        "keyword “reclamación”"
    )

    # Tenant B writes English: its notices are worded in English whatever the worker's language.
    tenant_b.language = "en"
    tenant_b.save(update_fields=["language"])
    agent_b = create_agent(api_b, fallback_message="Not now.", processing_config=NO_RETRY)
    fake_google.push(fake_google.unavailable(), fake_google.unavailable())
    send_message(api_b, agent_b, "Hello?")
    failed = send_message(api_b, agent_b, "Are you open tomorrow?").json()
    assert failed["escalation"]["reason"] == "llm_failure"
    conversation = Conversation.objects.unscoped().get(pk=failed["conversation_id"])
    notice = notice_build(conversation, EVENT_ESCALATED)
    assert notice["escalation"]["detail"] == "the model failed after retries (2 failures in a row)"
    assert _detail(api_b, failed["conversation_id"])["escalation"]["detail"] == (
        "el modelo falló tras los reintentos (2 fallos seguidos)"
    )
    assert api_a.get(f"/api/v1/conversations/{failed['conversation_id']}").status_code == 404

    # An escalation stored before: its detail is the text it was written with.
    Conversation.objects.unscoped().filter(pk=stored.pk).update(
        escalation_info={**stored.escalation_info, "detail": "palabra clave «queja»"}
    )
    for language in ("es", "en"):
        old = _detail(api_a, hit["conversation_id"], language)["escalation"]
        assert old["detail"] == "palabra clave «queja»"
