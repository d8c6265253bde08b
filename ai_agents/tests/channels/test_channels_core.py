"""The channel core every channel shares: store before acknowledging, answer exactly once and in
order on the real-time queue, and the handoff rule right before a reply leaves."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from ai_agents.channels import adapter_installed
from ai_agents.conversations.delivery import reply_deliver
from ai_agents.conversations.inbound import Inbound, inbound_accept
from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.agents import agent_create
from ai_agents.tasks import channel_conversation_answer
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle

CHANNEL = "testchan"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


class RecordingAdapter:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.typing_for: list[str] = []

    def send(self, *, binding: Any, conversation: Any, message: Any) -> str:
        self.sent.append(message.content)
        return "sent"

    def typing(self, *, binding: Any, conversation: Any, inbound: Any) -> None:
        self.typing_for.append(inbound.content)


@pytest.fixture
def adapter() -> Any:
    recording = RecordingAdapter()
    with adapter_installed(CHANNEL, recording):
        yield recording


@pytest.fixture
def binding(tenant_a: Any) -> ChannelBinding:
    agent = agent_create(
        tenant=tenant_a,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )
    return ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, agent=agent, type=ChannelBinding.Type.WEBCHAT
    )


def _inbound(text: str, message_id: str, thread: str = "cli-1") -> Inbound:
    return Inbound(
        text=text,
        contact={"external_id": thread},
        channel=CHANNEL,
        channel_message_id=message_id,
    )


def _respond(fake: FakeGoogle, text: str, **kw: Any) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text}, **kw))


@pytest.mark.django_db
def test_a_redelivered_message_is_stored_once_and_answered_once(
    binding: ChannelBinding, adapter: RecordingAdapter, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    _respond(fake_google, "Abrimos a las 8.")
    with run_tasks():
        first, created = inbound_accept(binding=binding, inbound=_inbound("¿Horario?", "m-1"))
        again, created_again = inbound_accept(binding=binding, inbound=_inbound("¿Horario?", "m-1"))

    assert (created, created_again) == (True, False)
    assert again.pk == first.pk
    assert adapter.sent == ["Abrimos a las 8."]
    assert adapter.typing_for == ["¿Horario?"]
    assert len(fake_google.generate_requests) == 1
    with tenant_scope(binding.tenant):
        reply = Message.objects.get(role="assistant")
        assert reply.reply_to_id == first.pk
        assert reply.delivery_status == "sent"
        conversation = Conversation.objects.get()
        assert conversation.binding_id == binding.pk
        assert conversation.message_count == 2
        assert conversation.last_inbound_at is not None
    # Running the task again (a redelivered task) sends nothing more.
    channel_conversation_answer(str(first.conversation_id), str(first.pk))
    assert adapter.sent == ["Abrimos a las 8."]


@pytest.mark.django_db
def test_a_batch_is_answered_one_reply_each_in_arrival_order(
    binding: ChannelBinding, adapter: RecordingAdapter, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    for text in ("uno", "dos", "tres"):
        _respond(fake_google, f"respuesta {text}")
    with run_tasks():
        for n, text in enumerate(("hola", "quiero saber", "el precio")):
            inbound_accept(binding=binding, inbound=_inbound(text, f"m-{n}"))

    assert adapter.sent == ["respuesta uno", "respuesta dos", "respuesta tres"]
    # The second question was asked with the first exchange as history, not the third.
    second = str(fake_google.generate_requests[1]["contents"])
    assert "hola" in second and "respuesta uno" in second and "el precio" not in second
    with tenant_scope(binding.tenant):
        replies = Message.objects.filter(role="assistant").order_by("created_at")
        assert [r.reply_to.content for r in replies] == ["hola", "quiero saber", "el precio"]


@pytest.mark.django_db
def test_a_reply_is_not_sent_once_a_person_holds_the_conversation(
    binding: ChannelBinding, adapter: RecordingAdapter, fake_google: FakeGoogle, owner: Any
) -> None:
    _respond(fake_google, "Respuesta del bot.")
    message, _ = inbound_accept(binding=binding, inbound=_inbound("hola", "m-1"))
    from ai_agents.conversations.engine import conversation_answer_pending

    results = conversation_answer_pending(conversation_id=message.conversation_id)
    with tenant_scope(binding.tenant):
        Conversation.objects.filter(pk=message.conversation_id).update(
            status="escalated", assigned_to=owner.user
        )

    reply = results[0].reply
    assert reply is not None
    assert reply_deliver(reply.id) == "suppressed"
    assert adapter.sent == []


@pytest.mark.django_db
def test_the_bot_keeps_quiet_on_a_conversation_closed_before_its_turn(
    binding: ChannelBinding, adapter: RecordingAdapter, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    message, _ = inbound_accept(binding=binding, inbound=_inbound("hola", "m-1"))
    with tenant_scope(binding.tenant):
        Conversation.objects.filter(pk=message.conversation_id).update(status="closed")
    with run_tasks():
        channel_conversation_answer(str(message.conversation_id), str(message.pk))

    assert adapter.sent == []
    assert fake_google.generate_requests == []


@pytest.mark.django_db(transaction=True)
def test_a_claim_while_the_model_works_silences_the_bot_and_never_waits(
    binding: ChannelBinding, adapter: RecordingAdapter, fake_google: FakeGoogle, owner: Any
) -> None:
    # The model takes 4 s; the claim must not wait for it (3 s: a bound no loaded machine misses).
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Tarde."}, delay=4))
    message, _ = inbound_accept(binding=binding, inbound=_inbound("hola", "m-1"))
    claim_took: list[float] = []

    def claim() -> None:
        from django.db import connection

        deadlines.wait_until(lambda: fake_google.requests, what="the model was called")
        started = time.monotonic()
        with tenant_scope(binding.tenant):
            Conversation.objects.filter(pk=message.conversation_id).update(
                status="escalated", assigned_to=owner.user
            )
        claim_took.append(time.monotonic() - started)
        connection.close()

    staff = threading.Thread(target=claim)
    staff.start()
    statuses = channel_conversation_answer(str(message.conversation_id), str(message.pk))
    deadlines.threads_join([staff])

    assert statuses == []
    assert adapter.sent == []
    assert len(claim_took) == 1
    assert claim_took[0] < 3.0  # the claim did not wait for the model
    with tenant_scope(binding.tenant):
        assert not Message.objects.filter(role="assistant").exists()
        stored = Message.objects.get(pk=message.pk)
        assert stored.metadata["result"]["suppressed"] == "human_took_over"
        conversation = Conversation.objects.get(pk=message.conversation_id)
        assert conversation.status == "escalated"
        assert conversation.assigned_to_id == owner.user.pk


@pytest.mark.django_db
def test_messages_of_another_tenants_binding_stay_in_that_tenant(
    binding: ChannelBinding, tenant_b: Any, adapter: RecordingAdapter, fake_google: FakeGoogle
) -> None:
    inbound_accept(binding=binding, inbound=_inbound("hola", "m-1"))
    with tenant_scope(tenant_b):
        assert not Message.objects.exists()
        assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_a_message_whose_task_was_lost_is_answered_by_the_sweep(
    binding: ChannelBinding, adapter: RecordingAdapter, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from ai_agents.tasks import channel_pending_sweep

    _respond(fake_google, "Aquí estoy.")
    # Stored, but its task never ran (outside run_tasks the on-commit enqueue is dropped).
    message, _ = inbound_accept(binding=binding, inbound=_inbound("¿abren mañana?", "m-1"))
    with tenant_scope(binding.tenant):
        assert channel_pending_sweep() == 0  # too recent: its own task may still be coming
        Message.objects.filter(pk=message.pk).update(
            created_at=timezone.now() - timedelta(minutes=2)
        )
    with run_tasks():
        assert channel_pending_sweep() == 1

    assert adapter.sent == ["Aquí estoy."]
    assert channel_pending_sweep() == 0
