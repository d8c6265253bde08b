"""The conversation's turn: a lease, not a transaction. While the model works no backend of the
app is idle in a transaction and no connection is checked out, so N conversations answered at
once with a slow model use fewer connections than N; one conversation's messages still run
one at a time, a run that finds the turn taken leaves it to the holder, and a lease left by a
killed worker expires."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError, connection
from django.utils import timezone

from ai_agents.conversations import store
from ai_agents.conversations.engine import conversation_answer_pending, message_process
from ai_agents.conversations.inbound import Inbound
from ai_agents.models import Agent, Conversation, Message
from ai_agents.services.agents import agent_create
from ai_agents.tasks import channel_pending_sweep
from ai_agents.tests.channels.whatsapp.support import stored
from erp.retry import Backoff
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.fixtures import owner_connection

FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}
MODEL_S = 1.5  # how long the fake model holds each request

# The app role's backends by state (the owner's connection, another role, is not counted).
_BACKENDS = """
SELECT state, count(*) FROM pg_stat_activity
WHERE usename = %s AND datname = current_database() GROUP BY state
"""


def _backends() -> dict[str, int]:
    with owner_connection() as owner:
        found = owner.execute(_BACKENDS, [settings.DATABASES["default"]["USER"]]).fetchall()
    return {state or "": count for state, count in found}


def _agent(tenant: Any) -> Agent:
    return agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )


def _slow_answers(fake: FakeGoogle, n: int) -> None:
    for i in range(n):
        fake.push(fake.reply_json({"action": "respond", "answer": f"Hola {i}."}, delay=MODEL_S))


def _send_in_threads(agent: Agent, contacts: list[str]) -> tuple[list[threading.Thread], list[Any]]:
    results: list[Any] = []

    def send(contact: str) -> None:
        try:
            inbound = Inbound(text="Hola", contact={"external_id": contact})
            results.append(message_process(agent=agent, inbound=inbound))
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(c,)) for c in contacts]
    for thread in threads:
        thread.start()
    return threads, results


@pytest.mark.django_db(transaction=True)
def test_no_backend_is_idle_in_a_transaction_while_the_model_works(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    _slow_answers(fake_google, 1)

    threads, results = _send_in_threads(agent, ["cli-1"])
    deadlines.wait_until(lambda: fake_google.generate_requests, what="the model is called")
    during = _backends()
    with tenant_scope(tenant_a):
        held = Conversation.objects.get().turn_token
    deadlines.threads_join(threads)

    assert during.get("idle in transaction", 0) == 0
    assert during.get("active", 0) == 0  # nothing of the app is running a statement either
    assert held is not None  # the conversation's turn is held meanwhile: a lease
    assert [r.reply.text for r in results] == ["Hola 0."]
    with tenant_scope(tenant_a):
        assert Conversation.objects.get().turn_token is None  # given back


@pytest.mark.django_db(transaction=True)
def test_conversations_answered_at_once_use_fewer_connections_than_conversations(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    n = 8  # within the pool (DB_POOL_MAX_SIZE): holding a connection each would also fit
    agent = _agent(tenant_a)
    _slow_answers(fake_google, n)

    threads, results = _send_in_threads(agent, [f"cli-{i}" for i in range(n)])
    deadlines.wait_until(
        lambda: len(fake_google.generate_requests) == n, what=f"{n} model calls in flight"
    )
    during = _backends()
    deadlines.threads_join(threads)

    busy = during.get("active", 0) + during.get("idle in transaction", 0)
    assert busy < n
    assert during.get("idle in transaction", 0) == 0
    assert sorted(len(r.reply.text) > 0 for r in results) == [True] * n


@pytest.mark.django_db(transaction=True)
def test_two_messages_of_one_conversation_sent_together_are_answered_in_order(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Uno."}, delay=0.5))
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Dos."}))

    first, results = _send_in_threads(agent, ["cli-1"])
    deadlines.wait_until(lambda: fake_google.generate_requests, what="the first model call")
    second, more = _send_in_threads(agent, ["cli-1"])
    deadlines.threads_join([*first, *second])

    assert [r.reply.text for r in [*results, *more]] == ["Uno.", "Dos."]
    # The second answer was asked for after the first was stored: its history holds it.
    assert "Uno." in str(fake_google.generate_requests[1])


def _lease(conversation_id: Any, tenant: Any, *, seconds: float) -> None:
    """The conversation's turn held by another run, for `seconds` (negative: expired)."""
    with tenant_scope(tenant):
        Conversation.objects.filter(pk=conversation_id).update(
            turn_token=uuid.uuid4(), turn_expires_at=timezone.now() + timedelta(seconds=seconds)
        )


@pytest.mark.django_db
def test_a_run_that_finds_the_turn_taken_leaves_the_messages_to_the_holder(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    message = stored(agent, "Hola", "wamid.turn-1")
    _lease(message.conversation_id, tenant_a, seconds=60)

    started = time.monotonic()
    results = conversation_answer_pending(conversation_id=message.conversation_id)

    assert results == []
    assert time.monotonic() - started < 1  # it did not wait for the holder
    assert fake_google.generate_requests == []


@pytest.mark.django_db
def test_a_lease_left_by_a_killed_worker_expires_and_the_sweep_queues_it_again(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    tenant = wa_binding.tenant
    message = stored(wa_binding.agent, "Hola", "wamid.turn-2", binding=wa_binding)
    with tenant_scope(tenant):
        Message.objects.filter(pk=message.pk).update(
            created_at=timezone.now() - timedelta(seconds=90)
        )
    _lease(message.conversation_id, tenant, seconds=60)
    assert channel_pending_sweep() == 0  # a live lease: its holder answers the message

    _lease(message.conversation_id, tenant, seconds=-1)  # its worker died a while ago
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Aquí estoy."}))
    with run_tasks():
        assert channel_pending_sweep() == 1
    with tenant_scope(tenant):
        answered = Message.objects.get(pk=message.pk)
        conversation = Conversation.objects.get(pk=message.conversation_id)
    assert answered.metadata["result"]["reply"]["text"] == "Aquí estoy."
    assert conversation.turn_token is None
    assert [b["text"]["body"] for b in fake_graph.sent] == ["Aquí estoy."]


@pytest.mark.django_db
def test_a_turn_is_given_back_across_a_database_blip(
    tenant_a: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails while PostgreSQL restarts gives its turn back once the database answers
    again, not after the lease expires (the conversation would stay unanswered meanwhile)."""
    agent = _agent(tenant_a)
    message = stored(agent, "Hola", "wamid.turn-3")
    token = uuid.uuid4()
    with tenant_scope(tenant_a):
        conversation = Conversation.objects.get(pk=message.conversation_id)
        Conversation.objects.filter(pk=conversation.pk).update(
            turn_token=token, turn_expires_at=timezone.now() + timedelta(seconds=60)
        )
    real = store.rows.run_together
    failures = [OperationalError("server closed the connection unexpectedly")] * 2

    def blip(statements: Any) -> Any:
        if failures:
            raise failures.pop()
        return real(statements)

    monkeypatch.setattr(store.rows, "run_together", blip)
    monkeypatch.setattr(store, "RELEASE_BACKOFF", Backoff(attempts=5, base_delay_s=0.01))

    with tenant_scope(tenant_a):
        store.turn_release(conversation=conversation, token=token)
        conversation.refresh_from_db()

    assert failures == []
    assert conversation.turn_token is None
