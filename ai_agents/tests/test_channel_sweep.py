"""The one-minute sweep re-queues channel messages whose task was lost, but never a
conversation a worker is answering right now (its turn, a lease, is live: that worker answers
what is pending)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from ai_agents.conversations.engine import conversation_answer_pending
from ai_agents.models import Message
from ai_agents.tasks import channel_conversation_answer, channel_pending_sweep
from ai_agents.tests.channels.whatsapp.support import stored_unanswered
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph


def _wait_until(condition: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_the_sweep_never_requeues_a_conversation_being_answered(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Listo."}, delay=3))
    message = stored_unanswered(wa_binding, "¿Siguen abiertos?", "wamid.sweep-1")

    def answer() -> None:
        try:
            channel_conversation_answer(str(message.conversation_id), str(message.pk))
        finally:
            connection.close()

    worker = threading.Thread(target=answer)
    worker.start()
    _wait_until(lambda: fake_google.generate_requests, 20)  # the model is working on it
    with run_tasks():  # anything the sweep queues runs right here, as a second worker would
        started = time.monotonic()
        queued = channel_pending_sweep()
        took = time.monotonic() - started
    worker.join(timeout=30)

    assert not worker.is_alive()
    assert queued == 0
    assert took < 1.5  # it did not wait for the answer in progress
    assert len(fake_google.generate_requests) == 1
    assert [b["text"]["body"] for b in fake_graph.sent] == ["Listo."]
    assert channel_pending_sweep() == 0  # answered: nothing left for the sweep


@pytest.mark.django_db(transaction=True)
def test_the_sweep_still_requeues_a_lost_message_next_to_one_being_answered(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    from ai_agents.models import ChannelBinding
    from ai_agents.tests.channels.whatsapp.support import NUMBER_B, binding_create

    other: ChannelBinding = binding_create(wa_binding.tenant, NUMBER_B, token="EAAG-token-b")
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Listo."}, delay=3))
    busy = stored_unanswered(wa_binding, "¿Siguen abiertos?", "wamid.sweep-1")
    lost = stored_unanswered(other, "¿Hay envío gratis?", "wamid.sweep-2")

    def answer() -> None:
        try:
            channel_conversation_answer(str(busy.conversation_id), str(busy.pk))
        finally:
            connection.close()

    worker = threading.Thread(target=answer)
    worker.start()
    _wait_until(lambda: fake_google.generate_requests, 20)
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Sí, desde 999."}))
    with run_tasks():
        queued = channel_pending_sweep()
    worker.join(timeout=30)

    assert not worker.is_alive()
    assert queued == 1
    assert sorted(b["text"]["body"] for b in fake_graph.sent) == ["Listo.", "Sí, desde 999."]
    with tenant_scope(wa_binding.tenant):
        answered = Message.objects.get(pk=lost.pk)
    assert answered.metadata["result"]["reply"]["text"] == "Sí, desde 999."


@pytest.mark.django_db
def test_a_backlog_is_answered_in_runs_that_end_before_the_tasks_time_limit(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    """Each message may take the agent's total_timeout_ms: a run stops taking messages when the
    next one could end past its deadline, keeps what it answered (each answer is committed as
    it is stored) and queues the rest, instead of being killed by the time limit."""
    from ai_agents.conversations.engine import conversation_answer_pending

    agent = wa_binding.agent
    agent.processing_config = {
        **agent.processing_config,
        "llm_timeout_ms": 1000,
        "total_timeout_ms": 1000,
        "burst_quiet_ms": 0,  # one reply per message (no merged burst)
    }
    agent.save(update_fields=["processing_config"])
    for n in range(3):
        fake_google.push(
            fake_google.reply_json({"action": "respond", "answer": f"Respuesta {n}."}, delay=0.4)
        )
    first = stored_unanswered(wa_binding, "uno", "wamid.b-1")
    stored_unanswered(wa_binding, "dos", "wamid.b-2")
    stored_unanswered(wa_binding, "tres", "wamid.b-3")

    results = conversation_answer_pending(conversation_id=first.conversation_id, deadline_s=1.2)

    assert [r.reply.text if r.reply else None for r in results] == [
        "Respuesta 0."
    ]  # 0.4 s + 1 s > 1.2 s
    with tenant_scope(wa_binding.tenant):
        left = Message.objects.filter(role="user").exclude(metadata__has_key="result")
        assert sorted(left.values_list("content", flat=True)) == ["dos", "tres"]
    # Past its deadline a run still answers one message (each is bounded by total_timeout_ms).
    again = conversation_answer_pending(conversation_id=first.conversation_id, deadline_s=0)
    assert [r.reply.text if r.reply else None for r in again] == ["Respuesta 1."]


@pytest.mark.django_db
def test_the_answer_task_queues_what_its_run_left_for_the_next_one(
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    monkeypatch: Any,
) -> None:
    import ai_agents.tasks

    monkeypatch.setattr(ai_agents.tasks, "ANSWER_RUN_S", 0)  # one message per run
    agent = wa_binding.agent
    agent.processing_config = {**agent.processing_config, "burst_quiet_ms": 0}  # no bursts
    agent.save(update_fields=["processing_config"])
    for n in range(3):
        fake_google.push(fake_google.reply_json({"action": "respond", "answer": f"R{n}."}))
    first = stored_unanswered(wa_binding, "uno", "wamid.b-1")
    stored_unanswered(wa_binding, "dos", "wamid.b-2")
    stored_unanswered(wa_binding, "tres", "wamid.b-3")

    with run_tasks():  # each follow-up runs as the worker would take it
        channel_conversation_answer(str(first.conversation_id), str(first.pk))

    assert [b["text"]["body"] for b in fake_graph.sent] == ["R0.", "R1.", "R2."]
    assert channel_pending_sweep() == 0


@pytest.mark.django_db
def test_a_reply_stored_but_never_sent_is_sent_by_the_sweep_once(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    """The run answered and stored its reply, then died (or the database went away) before
    handing it to WhatsApp: the customer message has its result, so only the unsent reply
    tells the sweep; it is sent once, and the model is not asked again."""
    message = stored_unanswered(wa_binding, "¿Hay envío gratis?", "wamid.sweep-unsent")
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Sí, desde 50 €."}))
    conversation_answer_pending(conversation_id=message.conversation_id)  # stored, not sent
    with tenant_scope(wa_binding.tenant):
        Message.objects.filter(conversation_id=message.conversation_id).update(
            created_at=timezone.now() - timedelta(seconds=90)
        )
        reply = Message.objects.get(reply_to_id=message.pk)
    assert reply.delivery_status == "" and fake_graph.sent == []

    with run_tasks():
        assert channel_pending_sweep() == 1

    assert [b["text"]["body"] for b in fake_graph.sent] == ["Sí, desde 50 €."]
    with tenant_scope(wa_binding.tenant):
        assert Message.objects.get(pk=reply.pk).delivery_status == "sent"
    with run_tasks():
        assert channel_pending_sweep() == 0
    assert len(fake_graph.sent) == 1
    assert len(fake_google.generate_requests) == 1
