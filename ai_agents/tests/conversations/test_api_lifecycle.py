"""The message API around the model call, against the fake Gemini server: repeated and
concurrent deliveries, tenant isolation, bad input, rate and token limits, usage recorded on
failure, and conversations that expire."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from ai_agents.models import Contact, Conversation, Message
from ai_agents.tests.conversations.support import (
    FAST,
    create_agent,
    push_answer,
    send_message,
)
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle


@pytest.mark.django_db
def test_repeated_channel_message_id_returns_the_first_result(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Primera respuesta.")
    first = send_message(api_a, agent_id, "Hola", channel_message_id="wamid.1")
    second = send_message(api_a, agent_id, "Hola", channel_message_id="wamid.1")
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

    agent_id = create_agent(api_client_for(tenant_a))
    push_answer(fake_google, "Una sola vez.")
    results: list[Any] = []
    barrier = deadlines.barrier(10)

    def send() -> None:
        client = api_client_for(tenant_a)
        barrier.wait()
        try:
            results.append(send_message(client, agent_id, "Hola", channel_message_id="wamid.X"))
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
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Hola.")
    conversation_id = send_message(api_a, agent_id, "Hola").json()["conversation_id"]

    assert send_message(api_b, agent_id, "Hola").status_code == 404
    assert api_b.get(f"/api/v1/conversations/{conversation_id}").status_code == 404
    assert api_b.get("/api/v1/conversations").json()["results"] == []
    assert api_a.get("/api/v1/conversations/x").status_code == 404
    assert len(fake_google.generate_requests) == 1


@pytest.mark.django_db
def test_bad_input_is_a_400_naming_the_field(api_a: Any) -> None:
    agent_id = create_agent(api_a)
    response = api_a.post(f"/api/v1/agents/{agent_id}/messages", {"text": "hola"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "contact"
    assert (Contact.objects.unscoped().count(), Conversation.objects.unscoped().count()) == (0, 0)


@pytest.mark.django_db
def test_message_21_within_a_minute_is_limited_with_retry_after(
    api_a: Any, tenant_a: Tenant
) -> None:
    # The offline answer is the same every time: without loop detection (on by default since
    # issue 15) so that all 20 reach the model.
    agent_id = create_agent(
        api_a, provider="offline", escalation_triggers=[{"type": "user_request"}]
    )
    statuses = [send_message(api_a, agent_id, f"Mensaje {i}").status_code for i in range(20)]
    assert statuses == [200] * 20

    limited = send_message(api_a, agent_id, "Mensaje 21")
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60
    error = limited.json()["error"]
    assert error["code"] == "rate_limited"
    again = send_message(api_a, agent_id, "Mensaje 22")
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
def test_tenant_tokens_per_minute_limit_stops_the_model_call(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    long_prompt = "Eres un asistente muy detallado. " * 60  # ~300 tokens
    agent_id = create_agent(
        api_a, system_prompt=long_prompt, processing_config={**FAST, "tokens_per_minute": 100}
    )
    limited = send_message(api_a, agent_id, "Hola")
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) >= 1
    assert fake_google.generate_requests == []
    detail = api_a.get(f"/api/v1/conversations/{limited.json()['error']['conversation_id']}")
    assert [m["role"] for m in detail.json()["messages"]] == ["user", "assistant"]  # + notice


@pytest.mark.django_db
def test_tokens_spent_are_recorded_even_when_the_message_fails_after_the_model(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RN-6: an unexpected error after the model call keeps the usage row (and its debit) of
    the tokens the model spent; the message stays stored, unanswered, and the conversation's
    turn is given back (nothing of the failed answer is written)."""
    from ai_agents.conversations import phases

    agent_id = create_agent(api_a)
    push_answer(fake_google, "Hola.")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug after the model call")

    monkeypatch.setattr(phases, "number_field", broken)
    failed = send_message(api_a, agent_id, "Hola")
    assert failed.status_code == 500 and failed.json()["error"]["code"]

    [row] = UsageLog.objects.for_tenant(tenant_a).filter(operation="llm_request")
    assert (row.success, row.input_tokens, str(row.agent_id)) == (True, 12, agent_id)
    with tenant_scope(tenant_a):
        [message] = Message.objects.all()
        assert (message.role, "result" in message.metadata) == ("user", False)
        assert Conversation.objects.get().turn_token is None


@pytest.mark.django_db
def test_inactive_conversations_expire_and_the_next_message_starts_a_new_one(
    api_a: Any, tenant_a: Tenant, run_tasks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from ai_agents.models import Conversation
    from ai_agents.tasks import bulk_expire_conversations

    agent_id = create_agent(api_a, provider="offline")
    first = send_message(api_a, agent_id, "Hola").json()["conversation_id"]
    fresh_agent = create_agent(api_a, provider="offline")
    fresh = send_message(api_a, fresh_agent, "Hola").json()["conversation_id"]
    Conversation.objects.for_tenant(tenant_a).filter(pk=first).update(
        last_message_at=timezone.now() - timedelta(hours=24, minutes=1)
    )

    assert bulk_expire_conversations.delay().get(timeout=30) == 1

    assert api_a.get(f"/api/v1/conversations/{first}").json()["status"] == "expired"
    assert api_a.get(f"/api/v1/conversations/{fresh}").json()["status"] == "active"
    second = send_message(api_a, agent_id, "Hola otra vez").json()
    assert second["conversation_id"] != first
    assert second["conversation_status"] == "active"

    # Idle for 24 hours and the beat task has not run yet: the message itself expires it.
    Conversation.objects.for_tenant(tenant_a).filter(pk=second["conversation_id"]).update(
        last_message_at=timezone.now() - timedelta(hours=24, seconds=5)
    )
    third = send_message(api_a, agent_id, "¿Siguen ahí?").json()
    assert third["conversation_id"] not in (first, second["conversation_id"])
    expired = api_a.get(f"/api/v1/conversations/{second['conversation_id']}").json()
    assert expired["status"] == "expired"
    assert [m["content"] for m in expired["messages"] if m["role"] == "user"] == ["Hola otra vez"]
    # A conversation that spoke 23 hours ago goes on.
    Conversation.objects.for_tenant(tenant_a).filter(pk=third["conversation_id"]).update(
        last_message_at=timezone.now() - timedelta(hours=23)
    )
    assert (
        send_message(api_a, agent_id, "Gracias").json()["conversation_id"]
        == third["conversation_id"]
    )


@pytest.mark.django_db
def test_a_conversation_expired_at_the_door_leaves_its_history_behind(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    agent_id = create_agent(api_a)
    push_answer(fake_google, "Buenas tardes.")
    first = send_message(api_a, agent_id, "Mi pedido es el A-17").json()["conversation_id"]
    Conversation.objects.for_tenant(tenant_a).filter(pk=first).update(
        last_message_at=timezone.now() - timedelta(hours=25)
    )
    push_answer(fake_google, "Hola de nuevo.")

    again = send_message(api_a, agent_id, "Hola").json()

    assert again["conversation_id"] != first
    turns = fake_google.generate_requests[-1]["contents"]
    assert [p["text"] for c in turns for p in c["parts"]] == ["Hola"]  # nothing of A-17
