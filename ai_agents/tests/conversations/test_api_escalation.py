"""Escalation through POST /api/v1/agents/{id}/messages, against the fake Gemini server:
configured triggers, the model's own signals, and the fallback when the model fails."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.tests.conversations.support import (
    FAST,
    create_agent,
    push_answer,
    send_message,
)
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle


@pytest.mark.django_db
def test_escalation_keyword_fires_a_near_miss_does_not_and_then_no_model_call(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a, escalation_message="Le paso con una persona.")
    push_answer(fake_google, "El agente de envíos es MRW.")
    near = send_message(api_a, agent_id, "¿Quién es el agente de envíos?").json()
    assert near["escalation"] is None
    assert near["reply"]["text"] == "El agente de envíos es MRW."
    assert len(fake_google.generate_requests) == 1

    hit = send_message(api_a, agent_id, "Quiero un agente, por favor").json()
    assert hit["conversation_status"] == "escalated"
    assert hit["escalation"] == {"reason": "user_request", "priority": "medium"}  # the detector
    assert hit["reply"]["text"] == "Le paso con una persona."
    assert len(fake_google.generate_requests) == 1  # decided before any model call

    silent = send_message(api_a, agent_id, "¿Hola?").json()
    assert silent["reply"] is None
    assert silent["conversation_status"] == "escalated"
    assert len(fake_google.generate_requests) == 1
    messages = api_a.get(f"/api/v1/conversations/{hit['conversation_id']}").json()["messages"]
    unanswered = next(m for m in messages if m["id"] == silent["message_id"])
    assert {"receive", "finish", "total"} <= set(unanswered["metadata"]["timings_ms"])

    listed = api_a.get("/api/v1/conversations?status=escalated").json()["results"]
    assert [c["id"] for c in listed] == [hit["conversation_id"]]
    assert listed[0]["escalation_reason"] == "user_request"
    assert api_a.get("/api/v1/conversations?status=nope").status_code == 400


@pytest.mark.django_db
def test_model_signals_escalate_negative_sentiment(api_a: Any, fake_google: FakeGoogle) -> None:
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Lo siento mucho.", sentiment=-0.9, confidence=0.9)
    body = send_message(api_a, agent_id, "Estoy harto, esto es una vergüenza").json()
    assert body["escalation"] == {"reason": "negative_sentiment", "priority": "high"}
    assert body["conversation_status"] == "escalated"


@pytest.mark.django_db
def test_configured_intents_are_offered_to_the_model_and_their_escalation_action_runs(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    intents = {
        "mode": "llm",
        "intents": [
            {
                "intent": "baja",
                "description": "El cliente quiere darse de baja",
                "examples": ["Quiero cancelar mi suscripción"],
                "action": "trigger_escalation",
            },
            {"intent": "horario", "description": "Pregunta por el horario"},
        ],
    }
    agent_id = create_agent(api_a, intent_detection=intents, escalation_triggers=[])
    push_answer(fake_google, "Abrimos a las 9.", intent="horario", confidence=0.9)
    push_answer(fake_google, "Lo siento.", intent="baja", confidence=0.9)

    first = send_message(api_a, agent_id, "¿A qué hora abren?").json()
    second = send_message(api_a, agent_id, "No quiero seguir con ustedes").json()

    system = fake_google.generate_requests[0]["systemInstruction"]["parts"][0]["text"]
    assert (
        "- baja: El cliente quiere darse de baja (p. ej. «Quiero cancelar mi suscripción»)"
        in system
    )
    assert "- horario: Pregunta por el horario" in system
    assert first["escalation"] is None
    assert second["escalation"]["reason"] == "intent_match"
    assert second["conversation_status"] == "escalated"

    keyword_only = create_agent(api_a, intent_detection={**intents, "mode": "keyword"})
    push_answer(fake_google, "Hola.")
    send_message(api_a, keyword_only, "Hola")
    system = fake_google.generate_requests[2]["systemInstruction"]["parts"][0]["text"]
    assert "- horario" not in system


def _team_tasks(callbacks: list[Any]) -> list[Any]:
    """The on-commit callbacks besides the inbox's live events (one per stored turn)."""
    return [c for c in callbacks if "inbox_event_publish" not in c.__qualname__]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("trigger", "fires", "misses"),
    [
        (
            {"type": "intent", "condition": {"intents": ["cancelar"]}, "priority": "high"},
            {"intent": "cancelar", "confidence": 0.9},
            {"intent": "pricing", "confidence": 0.9},
        ),
        (
            {"type": "confidence", "condition": {"threshold": 0.4}, "priority": "low"},
            {"confidence": 0.2},
            {"confidence": 0.5},
        ),
        (
            {"type": "sentiment", "condition": {"threshold": -0.5}, "priority": "urgent"},
            {"sentiment": -0.8, "confidence": 0.9},
            {"sentiment": -0.3, "confidence": 0.9},
        ),
    ],
)
def test_model_signal_triggers_fire_and_near_misses_do_not(
    api_a: Any,
    fake_google: FakeGoogle,
    django_capture_on_commit_callbacks: Any,
    trigger: dict[str, Any],
    fires: dict[str, Any],
    misses: dict[str, Any],
) -> None:
    agent_id = create_agent(
        api_a,
        escalation_triggers=[trigger],
        intent_detection={"mode": "llm", "intents": []},
    )
    push_answer(fake_google, "Respuesta.", **misses)
    with django_capture_on_commit_callbacks() as callbacks:
        near = send_message(api_a, agent_id, "Una pregunta").json()
    assert near["escalation"] is None
    assert _team_tasks(callbacks) == []

    push_answer(fake_google, "Respuesta.", **fires)
    with django_capture_on_commit_callbacks() as callbacks:
        hit = send_message(api_a, agent_id, "Otra pregunta").json()
    assert hit["escalation"]["priority"] == trigger["priority"]
    assert hit["conversation_status"] == "escalated"
    assert len(_team_tasks(callbacks)) == 1  # the team's notification task, on commit


@pytest.mark.django_db
def test_user_request_and_model_escalate_action(api_a: Any, fake_google: FakeGoogle) -> None:
    agent_id = create_agent(
        api_a,
        escalation_triggers=[{"type": "user_request", "priority": "high"}],
        intent_detection={"mode": "llm", "intents": []},
    )
    asked = send_message(api_a, agent_id, "Pásame con una persona, por favor").json()
    assert asked["escalation"] == {"reason": "user_request", "priority": "high"}
    assert fake_google.generate_requests == []

    other = create_agent(
        api_a, escalation_triggers=[], intent_detection={"mode": "llm", "intents": []}
    )
    fake_google.push(fake_google.reply_json({"action": "escalate", "reason": "reembolso"}))
    body = send_message(api_a, other, "Necesito un reembolso de una factura antigua").json()
    assert body["escalation"] == {"reason": "model_request", "priority": "medium"}


@pytest.mark.django_db
def test_loop_detection_escalates_the_third_identical_message(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(
        api_a,
        escalation_triggers=[
            {"type": "loop_detection", "condition": {"max_similar": 3}, "priority": "medium"}
        ],
        intent_detection={"mode": "llm", "intents": []},
    )
    question = "¿Cuándo llega mi paquete a Sevilla?"
    for _i in range(2):
        push_answer(fake_google, "Pronto.")
        assert send_message(api_a, agent_id, question).json()["escalation"] is None
    third = send_message(api_a, agent_id, question).json()
    assert third["escalation"]["reason"] == "conversation_loop"
    assert len(fake_google.generate_requests) == 2


@pytest.mark.django_db
def test_four_503s_give_the_fallback_message_and_failure_usage_rows(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(
        api_a,
        fallback_message="Ahora mismo no puedo responder.",
        processing_config={"failures_before_escalation": 1},
    )
    fake_google.push(*[fake_google.unavailable() for _ in range(4)])

    body = send_message(api_a, agent_id, "¿Abren mañana?").json()

    assert body["reply"]["text"] == "Ahora mismo no puedo responder."
    assert body["escalation"]["reason"] == "llm_failure"
    assert body["conversation_status"] == "escalated"
    assert len(fake_google.generate_requests) == 4
    rows = UsageLog.objects.for_tenant(tenant_a).filter(message_id=body["message_id"])
    assert rows.count() == 4
    assert not any(row.success for row in rows)


@pytest.mark.django_db
def test_an_agent_configured_not_to_escalate_on_failure_keeps_the_conversation(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(
        api_a,
        fallback_message="Ahora mismo no puedo responder.",
        processing_config={**FAST, "llm_max_retries": 0, "escalate_on_failure": False},
    )
    fake_google.push(fake_google.unavailable())

    body = send_message(api_a, agent_id, "¿Abren mañana?").json()

    assert body["reply"]["text"] == "Ahora mismo no puedo responder."
    assert (body["escalation"], body["conversation_status"]) == (None, "active")
    push_answer(fake_google, "Sí, de 9 a 14.")
    assert (
        send_message(api_a, agent_id, "¿Y el sábado?").json()["reply"]["text"] == "Sí, de 9 a 14."
    )
    bad = api_a.patch(
        f"/api/v1/agents/{agent_id}",
        {"processing_config": {"escalate_on_failure": "no"}},
        format="json",
    )
    assert bad.status_code == 400
    assert "escalate_on_failure" in str(bad.json())


@pytest.mark.django_db
def test_no_credits_gives_the_fallback_and_escalates(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a, fallback_message="No disponible.")
    Tenant.objects.filter(pk=tenant_a.pk).update(ai_credit_balance_usd=0)
    body = send_message(api_a, agent_id, "Hola").json()
    assert body["reply"]["text"] == "No disponible."
    assert body["escalation"] == {"reason": "no_credits", "priority": "urgent"}
    assert fake_google.generate_requests == []


@pytest.mark.django_db
def test_total_timeout_gives_the_fallback_and_a_timeout_escalation(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    import time

    agent_id = create_agent(
        api_a,
        fallback_message="Tardamos demasiado.",
        processing_config={
            "llm_retry_delay_ms": 0,
            "llm_timeout_ms": 2000,
            "total_timeout_ms": 2500,
            "failures_before_escalation": 1,
        },
    )
    fake_google.push(*[fake_google.hang(30) for _ in range(4)])
    started = time.monotonic()
    body = send_message(api_a, agent_id, "¿Hola?").json()
    elapsed = time.monotonic() - started

    assert body["reply"]["text"] == "Tardamos demasiado."
    assert body["escalation"]["reason"] == "timeout"
    assert elapsed < 5  # total_timeout_ms bounds every attempt and wait (4 x 2 s without)
    failures = UsageLog.objects.for_tenant(tenant_a).filter(success=False)
    assert failures.count() >= 2
