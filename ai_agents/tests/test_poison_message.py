"""A message whose answering always dies (its worker replaced at the task's hard time limit) is
queued again by the sweep only until it was taken MAX_ANSWER_ATTEMPTS times; then the customer
is told in words that a person will answer and the conversation is escalated. A message that
failed fewer times is still answered by the model."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from ai_agents.conversations import store
from ai_agents.conversations.attempts import MAX_ANSWER_ATTEMPTS
from ai_agents.models import Conversation, Message
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.tasks import channel_pending_sweep
from ai_agents.tests.channels.whatsapp.support import stored_unanswered
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph

GAVE_UP_ES = "Lo siento, no he podido procesar su mensaje. Le paso con una persona del equipo"
GAVE_UP_EN = "Sorry, I could not process your message. I am passing you to a person on the team"


def _attempt_that_dies(binding: Any, message: Message) -> None:
    """A run takes the message (as the worker's task does) and is killed mid-answer: nothing is
    stored, its lease is left behind and expires."""
    with tenant_scope(binding.tenant):
        conversation = Conversation.objects.get(pk=message.conversation_id)
        found = store.turn_next(
            agent=binding.agent, conversation=conversation, token=uuid.uuid4(), lease_s=60
        )
        assert found is not None and found.message is not None
        assert found.message.pk == message.pk
        Conversation.objects.filter(pk=conversation.pk).update(
            turn_expires_at=timezone.now() - timedelta(seconds=1)
        )


def _answer_calls(fake: FakeGoogle) -> int:
    """Model calls asked for an answer (the escalation's summary for the team is not one)."""
    return sum("responseMimeType" in r.get("generationConfig", {}) for r in fake.generate_requests)


def _sweep(run_tasks: Any) -> int:
    with run_tasks():  # what the sweep queues runs here, as the worker would run it
        return channel_pending_sweep()


def _dies_then_swept(
    binding: Any, fake: FakeGoogle, run_tasks: Any, text: str, *, deaths: int
) -> Message:
    """The message, stored a while ago, taken `deaths` times by runs that died, then queued
    again by the sweep (whose task runs, the model ready to answer "Sí."); it comes back as
    stored afterwards."""
    fake.push(fake.reply_json({"action": "respond", "answer": "Sí."}))
    message = stored_unanswered(binding, text, f"wamid.poison-{deaths}-{uuid.uuid4().hex[:6]}")
    for _ in range(deaths):
        _attempt_that_dies(binding, message)
    assert _sweep(run_tasks) == 1
    with tenant_scope(binding.tenant):
        return Message.objects.select_related("conversation").get(pk=message.pk)


@pytest.mark.django_db
def test_a_message_that_always_dies_is_given_up_with_the_customer_told(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    question = "Do you ship to Canary Islands?"
    stored = _dies_then_swept(
        wa_binding, fake_google, run_tasks, question, deaths=MAX_ANSWER_ATTEMPTS
    )

    assert _answer_calls(fake_google) == 0  # not tried a fourth time
    assert [b["text"]["body"] for b in fake_graph.sent] == [
        f"{GAVE_UP_EN}, who will answer you as soon as possible."
    ]
    assert stored.attempts == MAX_ANSWER_ATTEMPTS + 1
    assert stored.metadata["result"]["escalation"]["reason"] == "processing_failed"
    assert stored.conversation.status == Conversation.Status.ESCALATED
    view = conversation_escalation(stored.conversation)
    assert view is not None
    assert view["reason_label"] == "No se pudo procesar el mensaje tras varios intentos"
    assert view["priority"] == "high"
    # Answered (given up): the sweep does not queue it again, nothing more is sent.
    assert (_sweep(run_tasks), len(fake_graph.sent)) == (0, 1)


@pytest.mark.django_db
def test_a_message_that_died_fewer_times_is_still_answered(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    deaths = MAX_ANSWER_ATTEMPTS - 1
    stored = _dies_then_swept(
        wa_binding, fake_google, run_tasks, "¿Envían a Canarias?", deaths=deaths
    )

    assert [b["text"]["body"] for b in fake_graph.sent] == ["Sí."]
    assert _answer_calls(fake_google) == 1
    assert stored.attempts == MAX_ANSWER_ATTEMPTS
    assert stored.conversation.status == Conversation.Status.ACTIVE
    assert _sweep(run_tasks) == 0


@pytest.mark.django_db
def test_a_spanish_customer_is_told_in_spanish(
    wa_binding: Any, fake_google: FakeGoogle, fake_graph: FakeGraph, run_tasks: Any
) -> None:
    _dies_then_swept(
        wa_binding, fake_google, run_tasks, "¿Hacen envíos?", deaths=MAX_ANSWER_ATTEMPTS
    )
    assert [b["text"]["body"] for b in fake_graph.sent] == [
        f"{GAVE_UP_ES}, que le responderá lo antes posible."
    ]
    assert _answer_calls(fake_google) == 0
