"""The message pipeline end to end through POST /api/v1/agents/{id}/messages, against the
fake Gemini server (real Postgres, real gateway, real google-genai client)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from ai_agents.models import Contact, Conversation, Message
from ai_agents.services.knowledge import document_add, document_ingest, knowledge_base_create
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle

SHIPPING = (
    "# Envíos\n\nEnviamos a toda la península en 48 horas. El envío cuesta 4,95 euros y es "
    "gratis a partir de 50 euros de compra.\n\n"
    "# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00.\n"
)
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def _agent(api: Any, **extra: Any) -> str:
    body = {
        "name": "Lucía",
        "system_prompt": "Eres {{agent_name}}, asistente de {{company_name}}. "
        "Cliente: {{customer_name}}. Hoy: {{current_date}}.",
        "processing_config": FAST,
        **extra,
    }
    response = api.post("/api/v1/agents", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _send(api: Any, agent_id: str, text: str, **extra: Any) -> Any:
    body = {"contact": {"external_id": "cli-1", "name": "Ana"}, "text": text, **extra}
    return api.post(f"/api/v1/agents/{agent_id}/messages", body, format="json")


def _shipping_kb(tenant: Tenant, **options: Any) -> Any:
    """A knowledge base holding the shipping page (ingested)."""
    kb = knowledge_base_create(tenant=tenant, name="FAQ", **options)
    added = document_add(kb=kb, data=SHIPPING.encode(), filename="envios.md", enqueue=False)
    document_ingest(document=added.document)
    return kb


def _answer(fake: FakeGoogle, text: str, **fields: Any) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text, **fields}))


@pytest.mark.django_db
def test_answer_with_citations_from_the_agents_knowledge_base(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    kb = _shipping_kb(tenant_a)
    agent_id = _agent(api_a, knowledge_bases=[str(kb.pk)])
    _answer(fake_google, "El envío cuesta 4,95 euros.", intent="pricing", confidence=0.9)

    response = _send(api_a, agent_id, "¿Cuánto cuesta el envío?")

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
    _answer(fake_google, "De nada.")
    assert _send(api_a, agent_id, "Gracias").json()["conversation_id"] == body["conversation_id"]
    contents = fake_google.generate_requests[1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]


@pytest.mark.django_db
def test_chunks_given_to_the_model_are_recorded_even_when_its_answer_is_escalated(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    kb = _shipping_kb(tenant_a)
    agent_id = _agent(api_a, knowledge_bases=[str(kb.pk)])
    _answer(fake_google, "Creo que 4,95.", confidence=0.1)  # low confidence: escalates

    body = _send(api_a, agent_id, "¿Cuánto cuesta el envío?").json()

    assert body["escalation"]["reason"] == "low_confidence"
    assert body["reply"]["citations"] == []  # the escalation message cites nothing
    reply = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()["messages"][1]
    assert reply["rag_chunks_used"]  # but the model was given the passages
    assert reply["rag_search_time_ms"] is not None


@pytest.mark.django_db
def test_the_model_is_told_the_time_business_customer_and_session_even_if_the_prompt_is_silent(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, system_prompt="Eres un asistente amable.")
    _answer(fake_google, "Hola, Ana.")
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
    _answer(fake_google, "Su pedido A-17 sale hoy.")
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

    kb = _shipping_kb(tenant_a, embedding_provider="google")
    agent_id = _agent(
        api_a, knowledge_bases=[str(kb.pk)], processing_config={**FAST, "rag_timeout_ms": 400}
    )
    fake_google.push_embed(FakeGoogle.hang(30), FakeGoogle.hang(30))
    _answer(fake_google, "El envío cuesta 4,95 euros.")

    started = time.monotonic()
    body = _send(api_a, agent_id, "¿Cuánto cuesta el envío?").json()

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
def test_escalation_keyword_fires_a_near_miss_does_not_and_then_no_model_call(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, escalation_message="Le paso con una persona.")
    _answer(fake_google, "El agente de envíos es MRW.")
    near = _send(api_a, agent_id, "¿Quién es el agente de envíos?").json()
    assert near["escalation"] is None
    assert near["reply"]["text"] == "El agente de envíos es MRW."
    assert len(fake_google.generate_requests) == 1

    hit = _send(api_a, agent_id, "Quiero un agente, por favor").json()
    assert hit["conversation_status"] == "escalated"
    assert hit["escalation"] == {"reason": "keyword_match", "priority": "medium"}
    assert hit["reply"]["text"] == "Le paso con una persona."
    assert len(fake_google.generate_requests) == 1  # decided before any model call

    silent = _send(api_a, agent_id, "¿Hola?").json()
    assert silent["reply"] is None
    assert silent["conversation_status"] == "escalated"
    assert len(fake_google.generate_requests) == 1
    messages = api_a.get(f"/api/v1/conversations/{hit['conversation_id']}").json()["messages"]
    unanswered = next(m for m in messages if m["id"] == silent["message_id"])
    assert {"receive", "finish", "total"} <= set(unanswered["metadata"]["timings_ms"])

    listed = api_a.get("/api/v1/conversations?status=escalated").json()["results"]
    assert [c["id"] for c in listed] == [hit["conversation_id"]]
    assert listed[0]["escalation_reason"] == "keyword_match"
    assert api_a.get("/api/v1/conversations?status=nope").status_code == 400


@pytest.mark.django_db
def test_model_signals_escalate_negative_sentiment(api_a: Any, fake_google: FakeGoogle) -> None:
    agent_id = _agent(api_a)
    _answer(fake_google, "Lo siento mucho.", sentiment=-0.9, confidence=0.9)
    body = _send(api_a, agent_id, "Estoy harto, esto es una vergüenza").json()
    assert body["escalation"] == {"reason": "negative_sentiment", "priority": "high"}
    assert body["conversation_status"] == "escalated"


@pytest.mark.django_db
def test_four_503s_give_the_fallback_message_and_failure_usage_rows(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, fallback_message="Ahora mismo no puedo responder.")
    fake_google.push(*[fake_google.unavailable() for _ in range(4)])

    body = _send(api_a, agent_id, "¿Abren mañana?").json()

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
    agent_id = _agent(
        api_a,
        fallback_message="Ahora mismo no puedo responder.",
        processing_config={**FAST, "llm_max_retries": 0, "escalate_on_failure": False},
    )
    fake_google.push(fake_google.unavailable())

    body = _send(api_a, agent_id, "¿Abren mañana?").json()

    assert body["reply"]["text"] == "Ahora mismo no puedo responder."
    assert (body["escalation"], body["conversation_status"]) == (None, "active")
    _answer(fake_google, "Sí, de 9 a 14.")
    assert _send(api_a, agent_id, "¿Y el sábado?").json()["reply"]["text"] == "Sí, de 9 a 14."
    bad = api_a.patch(
        f"/api/v1/agents/{agent_id}",
        {"processing_config": {"escalate_on_failure": "no"}},
        format="json",
    )
    assert bad.status_code == 400
    assert "escalate_on_failure" in str(bad.json())


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
    agent_id = _agent(api_a, intent_detection=intents, escalation_triggers=[])
    _answer(fake_google, "Abrimos a las 9.", intent="horario", confidence=0.9)
    _answer(fake_google, "Lo siento.", intent="baja", confidence=0.9)

    first = _send(api_a, agent_id, "¿A qué hora abren?").json()
    second = _send(api_a, agent_id, "No quiero seguir con ustedes").json()

    system = fake_google.generate_requests[0]["systemInstruction"]["parts"][0]["text"]
    assert (
        "- baja: El cliente quiere darse de baja (p. ej. «Quiero cancelar mi suscripción»)"
        in system
    )
    assert "- horario: Pregunta por el horario" in system
    assert first["escalation"] is None
    assert second["escalation"]["reason"] == "intent_match"
    assert second["conversation_status"] == "escalated"

    keyword_only = _agent(api_a, intent_detection={**intents, "mode": "keyword"})
    _answer(fake_google, "Hola.")
    _send(api_a, keyword_only, "Hola")
    system = fake_google.generate_requests[2]["systemInstruction"]["parts"][0]["text"]
    assert "- horario" not in system


@pytest.mark.django_db
def test_tokens_spent_are_recorded_even_when_the_message_fails_after_the_model(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RN-6: an unexpected error after the model call keeps the usage row (and its debit) of
    the tokens the model spent; the message stays stored, unanswered, and the conversation's
    turn is given back (nothing of the failed answer is written)."""
    from ai_agents.conversations import engine

    agent_id = _agent(api_a)
    _answer(fake_google, "Hola.")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug after the model call")

    monkeypatch.setattr(engine, "number_field", broken)
    failed = _send(api_a, agent_id, "Hola")
    assert failed.status_code == 500 and failed.json()["error"]["code"]

    [row] = UsageLog.objects.for_tenant(tenant_a).filter(operation="llm_request")
    assert (row.success, row.input_tokens, str(row.agent_id)) == (True, 12, agent_id)
    with tenant_scope(tenant_a):
        [message] = Message.objects.all()
        assert (message.role, "result" in message.metadata) == ("user", False)
        assert Conversation.objects.get().turn_token is None


@pytest.mark.django_db
def test_repeated_channel_message_id_returns_the_first_result(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a)
    _answer(fake_google, "Primera respuesta.")
    first = _send(api_a, agent_id, "Hola", channel_message_id="wamid.1")
    second = _send(api_a, agent_id, "Hola", channel_message_id="wamid.1")
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert len(fake_google.generate_requests) == 1
    detail = api_a.get(f"/api/v1/conversations/{first.json()['conversation_id']}").json()
    assert len(detail["messages"]) == 2


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_duplicates_make_one_model_call(
    tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    from erp.testing.fixtures import api_client_for

    agent_id = _agent(api_client_for(tenant_a))
    _answer(fake_google, "Una sola vez.")
    results: list[Any] = []
    barrier = deadlines.barrier(10)

    def send() -> None:
        client = api_client_for(tenant_a)
        barrier.wait()
        try:
            results.append(_send(client, agent_id, "Hola", channel_message_id="wamid.X"))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(10)]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)

    assert [r.status_code for r in results] == [200] * 10
    assert {r.json()["reply"]["text"] for r in results} == {"Una sola vez."}
    assert len({r.json()["message_id"] for r in results}) == 1
    assert len(fake_google.generate_requests) == 1


@pytest.mark.django_db
def test_tenants_never_see_each_others_agents_or_conversations(
    api_a: Any, api_b: Any, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a)
    _answer(fake_google, "Hola.")
    conversation_id = _send(api_a, agent_id, "Hola").json()["conversation_id"]

    assert _send(api_b, agent_id, "Hola").status_code == 404
    assert api_b.get(f"/api/v1/conversations/{conversation_id}").status_code == 404
    assert api_b.get("/api/v1/conversations").json()["results"] == []
    assert api_a.get("/api/v1/conversations/x").status_code == 404
    assert len(fake_google.generate_requests) == 1


@pytest.mark.django_db
def test_bad_input_is_a_400_naming_the_field(api_a: Any) -> None:
    agent_id = _agent(api_a)
    response = api_a.post(f"/api/v1/agents/{agent_id}/messages", {"text": "hola"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "contact"
    assert (Contact.objects.unscoped().count(), Conversation.objects.unscoped().count()) == (0, 0)


@pytest.mark.django_db
def test_message_21_within_a_minute_is_limited_with_retry_after(
    api_a: Any, tenant_a: Tenant
) -> None:
    agent_id = _agent(api_a, provider="offline")
    statuses = [_send(api_a, agent_id, f"Mensaje {i}").status_code for i in range(20)]
    assert statuses == [200] * 20

    limited = _send(api_a, agent_id, "Mensaje 21")
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60
    error = limited.json()["error"]
    assert error["code"] == "rate_limited"
    again = _send(api_a, agent_id, "Mensaje 22")
    assert again.status_code == 429

    detail = api_a.get(f"/api/v1/conversations/{error['conversation_id']}").json()
    users = [m for m in detail["messages"] if m["role"] == "user"]
    assert len(users) == 22  # over the limit: stored all the same
    notices = [m for m in detail["messages"] if m["metadata"].get("rate_limited")]
    assert len(notices) == 1  # one polite notice per window
    model_calls = UsageLog.objects.for_tenant(tenant_a).filter(
        conversation_id=error["conversation_id"]
    )
    assert model_calls.count() == 20


@pytest.mark.django_db
def test_inactive_conversations_expire_and_the_next_message_starts_a_new_one(
    api_a: Any, tenant_a: Tenant, run_tasks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from ai_agents.models import Conversation
    from ai_agents.tasks import bulk_expire_conversations

    agent_id = _agent(api_a, provider="offline")
    first = _send(api_a, agent_id, "Hola").json()["conversation_id"]
    fresh_agent = _agent(api_a, provider="offline")
    fresh = _send(api_a, fresh_agent, "Hola").json()["conversation_id"]
    Conversation.objects.for_tenant(tenant_a).filter(pk=first).update(
        last_message_at=timezone.now() - timedelta(hours=24, minutes=1)
    )

    assert bulk_expire_conversations.delay().get(timeout=30) == 1

    assert api_a.get(f"/api/v1/conversations/{first}").json()["status"] == "expired"
    assert api_a.get(f"/api/v1/conversations/{fresh}").json()["status"] == "active"
    second = _send(api_a, agent_id, "Hola otra vez").json()
    assert second["conversation_id"] != first
    assert second["conversation_status"] == "active"

    # Idle for 24 hours and the beat task has not run yet: the message itself expires it.
    Conversation.objects.for_tenant(tenant_a).filter(pk=second["conversation_id"]).update(
        last_message_at=timezone.now() - timedelta(hours=24, seconds=5)
    )
    third = _send(api_a, agent_id, "¿Siguen ahí?").json()
    assert third["conversation_id"] not in (first, second["conversation_id"])
    expired = api_a.get(f"/api/v1/conversations/{second['conversation_id']}").json()
    assert expired["status"] == "expired"
    assert [m["content"] for m in expired["messages"] if m["role"] == "user"] == ["Hola otra vez"]
    # A conversation that spoke 23 hours ago goes on.
    Conversation.objects.for_tenant(tenant_a).filter(pk=third["conversation_id"]).update(
        last_message_at=timezone.now() - timedelta(hours=23)
    )
    assert _send(api_a, agent_id, "Gracias").json()["conversation_id"] == third["conversation_id"]


@pytest.mark.django_db
def test_a_conversation_expired_at_the_door_leaves_its_history_behind(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    agent_id = _agent(api_a)
    _answer(fake_google, "Buenas tardes.")
    first = _send(api_a, agent_id, "Mi pedido es el A-17").json()["conversation_id"]
    Conversation.objects.for_tenant(tenant_a).filter(pk=first).update(
        last_message_at=timezone.now() - timedelta(hours=25)
    )
    _answer(fake_google, "Hola de nuevo.")

    again = _send(api_a, agent_id, "Hola").json()

    assert again["conversation_id"] != first
    turns = fake_google.generate_requests[-1]["contents"]
    assert [p["text"] for c in turns for p in c["parts"]] == ["Hola"]  # nothing of A-17


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
    agent_id = _agent(
        api_a,
        escalation_triggers=[trigger],
        intent_detection={"mode": "llm", "intents": []},
    )
    _answer(fake_google, "Respuesta.", **misses)
    with django_capture_on_commit_callbacks() as callbacks:
        near = _send(api_a, agent_id, "Una pregunta").json()
    assert near["escalation"] is None
    assert callbacks == []

    _answer(fake_google, "Respuesta.", **fires)
    with django_capture_on_commit_callbacks() as callbacks:
        hit = _send(api_a, agent_id, "Otra pregunta").json()
    assert hit["escalation"]["priority"] == trigger["priority"]
    assert hit["conversation_status"] == "escalated"
    assert len(callbacks) == 1  # the team's notification task is enqueued on commit


@pytest.mark.django_db
def test_user_request_and_model_escalate_action(api_a: Any, fake_google: FakeGoogle) -> None:
    agent_id = _agent(
        api_a,
        escalation_triggers=[{"type": "user_request", "priority": "high"}],
        intent_detection={"mode": "llm", "intents": []},
    )
    asked = _send(api_a, agent_id, "Pásame con una persona, por favor").json()
    assert asked["escalation"] == {"reason": "user_request", "priority": "high"}
    assert fake_google.generate_requests == []

    other = _agent(api_a, escalation_triggers=[], intent_detection={"mode": "llm", "intents": []})
    fake_google.push(fake_google.reply_json({"action": "escalate", "reason": "reembolso"}))
    body = _send(api_a, other, "Necesito un reembolso de una factura antigua").json()
    assert body["escalation"] == {"reason": "model_request", "priority": "medium"}


@pytest.mark.django_db
def test_loop_detection_escalates_the_third_identical_message(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(
        api_a,
        escalation_triggers=[
            {"type": "loop_detection", "condition": {"max_similar": 3}, "priority": "medium"}
        ],
        intent_detection={"mode": "llm", "intents": []},
    )
    question = "¿Cuándo llega mi paquete a Sevilla?"
    for _i in range(2):
        _answer(fake_google, "Pronto.")
        assert _send(api_a, agent_id, question).json()["escalation"] is None
    third = _send(api_a, agent_id, question).json()
    assert third["escalation"]["reason"] == "conversation_loop"
    assert len(fake_google.generate_requests) == 2


@pytest.mark.django_db
def test_no_credits_gives_the_fallback_and_escalates(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, fallback_message="No disponible.")
    Tenant.objects.filter(pk=tenant_a.pk).update(ai_credit_balance_usd=0)
    body = _send(api_a, agent_id, "Hola").json()
    assert body["reply"]["text"] == "No disponible."
    assert body["escalation"] == {"reason": "no_credits", "priority": "urgent"}
    assert fake_google.generate_requests == []


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
    body = _send(api, str(agent.pk), "¿A qué hora abren los sábados?").json()
    assert OFFLINE_LABEL in body["reply"]["text"]
    assert body["reply"]["citations"]
    assert body["usage"] == {"input_tokens": 0, "output_tokens": 0, "cost_usd": "0.000000"}


@pytest.mark.django_db
def test_tenant_tokens_per_minute_limit_stops_the_model_call(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    long_prompt = "Eres un asistente muy detallado. " * 60  # ~300 tokens
    agent_id = _agent(
        api_a, system_prompt=long_prompt, processing_config={**FAST, "tokens_per_minute": 100}
    )
    limited = _send(api_a, agent_id, "Hola")
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) >= 1
    assert fake_google.generate_requests == []
    detail = api_a.get(f"/api/v1/conversations/{limited.json()['error']['conversation_id']}")
    assert [m["role"] for m in detail.json()["messages"]] == ["user", "assistant"]  # + notice


@pytest.mark.django_db
def test_total_timeout_gives_the_fallback_and_a_timeout_escalation(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    import time

    agent_id = _agent(
        api_a,
        fallback_message="Tardamos demasiado.",
        processing_config={
            "llm_retry_delay_ms": 0,
            "llm_timeout_ms": 2000,
            "total_timeout_ms": 2500,
        },
    )
    fake_google.push(*[fake_google.hang(30) for _ in range(4)])
    started = time.monotonic()
    body = _send(api_a, agent_id, "¿Hola?").json()
    elapsed = time.monotonic() - started

    assert body["reply"]["text"] == "Tardamos demasiado."
    assert body["escalation"]["reason"] == "timeout"
    assert elapsed < 5  # total_timeout_ms bounds every attempt and wait (4 x 2 s without)
    failures = UsageLog.objects.for_tenant(tenant_a).filter(success=False)
    assert failures.count() >= 2


@pytest.mark.django_db
def test_retrieval_timeout_answers_without_chunks(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, monkeypatch: Any
) -> None:
    """`rag_timeout_ms` is a real statement timeout: a search slower than it (pg_sleep added
    to the search statement) is cancelled by PostgreSQL, rolled back to its savepoint, and
    the answer goes on without chunks in the same transaction."""
    from ai_agents.selectors import knowledge

    kb = _shipping_kb(tenant_a)
    agent_id = _agent(
        api_a, knowledge_bases=[str(kb.pk)], processing_config={**FAST, "rag_timeout_ms": 50}
    )
    real = knowledge._search_statement

    def slow(**kwargs: Any) -> tuple[str, dict[str, Any]]:
        sql, params = real(**kwargs)
        return f"SELECT found.* FROM ({sql}) found, (SELECT pg_sleep(5)) slow", params

    monkeypatch.setattr(knowledge, "_search_statement", slow)
    _answer(fake_google, "No lo sé seguro.")

    response = _send(api_a, agent_id, "¿Cuánto cuesta el envío?")

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
    _answer(fake_google, "El envío cuesta 4,95 euros.")
    again = _send(api_a, agent_id, "¿Cuánto cuesta el envío?").json()
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
