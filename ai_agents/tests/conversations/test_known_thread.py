"""A REST message for a thread whose conversation is open is stored in the round trip that
takes the turn (ai_agents/conversations/known_thread.py): three round trips for a message
without retrieval, with the same rows as the slow path, each tenant's in its own conversation;
a thread whose conversation is idle, closed or missing is stored the usual way."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from ai_agents.conversations.engine import message_process
from ai_agents.conversations.inbound import Inbound, inbound_accept, message_prepare
from ai_agents.conversations.known_thread import STORED_SETTING
from ai_agents.models import Agent, Contact, Conversation, Message
from ai_agents.services.agents import agent_create
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle

FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def _agent(tenant: Any) -> Agent:
    return agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )


def _send(agent: Agent, fake: FakeGoogle, text: str, **contact: Any) -> tuple[Any, int]:
    """The message from contact `ana` (its result) and the SQL round trips it cost."""
    fake.push(fake.reply_json({"action": "respond", "answer": f"Re: {text}"}))
    sent: list[str] = []

    def count(execute: Any, sql: str, *rest: Any) -> Any:  # params, many, context
        sent.append(sql)
        return execute(sql, *rest)

    inbound = Inbound(text=text, contact={"external_id": "ana", **contact})
    with connection.execute_wrapper(count):
        result = message_process(agent=agent, inbound=inbound)
    return result, len(sent)


def _rows(conversation_id: Any) -> tuple[Conversation, list[Message]]:
    conversation = Conversation.objects.unscoped().get(pk=conversation_id)
    messages = Message.objects.unscoped().filter(conversation_id=conversation_id)
    return conversation, list(messages.order_by("created_at"))


@pytest.mark.django_db(transaction=True)
def test_a_known_thread_costs_three_round_trips_and_keeps_each_tenant_apart(
    tenant_a: Any, tenant_b: Any, fake_google: FakeGoogle
) -> None:
    agents = {tenant.pk: _agent(tenant) for tenant in (tenant_a, tenant_b)}
    first = {pk: _send(agent, fake_google, "Hola")[0] for pk, agent in agents.items()}
    for pk, agent in agents.items():
        result, round_trips = _send(agent, fake_google, f"¿Abren mañana? ({pk})")
        # Stored with the turn's reads, the tenant's AI credit checked before the model call,
        # the reply stored with the turn given back (4 when the thread was read first).
        assert round_trips == 3
        assert result.conversation_id == first[pk].conversation_id
        assert result.reply.text == f"Re: ¿Abren mañana? ({pk})"
        conversation, messages = _rows(result.conversation_id)
        assert conversation.tenant_id == pk
        assert [(m.role, m.tenant_id) for m in messages] == [("user", pk), ("assistant", pk)] * 2
        assert messages[2].content == f"¿Abren mañana? ({pk})"
        assert conversation.message_count == 4
        assert conversation.last_inbound_at == messages[2].created_at
        assert conversation.turn_token is None  # given back
    assert first[tenant_a.pk].conversation_id != first[tenant_b.pk].conversation_id


@pytest.mark.django_db(transaction=True)
def test_the_sender_s_new_name_is_kept_on_a_known_thread(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    _send(agent, fake_google, "Hola", name="Ana")
    _send(agent, fake_google, "Soy yo otra vez", name="Ana María")
    contact = Contact.objects.unscoped().get(tenant=tenant_a, external_id="ana")
    assert contact.name == "Ana María"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("status", "idle_h", "kept_status"),
    [("active", 25, "expired"), ("closed", 0, "closed"), ("active", 23, None)],
)
def test_an_idle_or_closed_conversation_is_not_joined(
    tenant_a: Any, fake_google: FakeGoogle, status: str, idle_h: int, kept_status: str | None
) -> None:
    agent = _agent(tenant_a)
    before = _send(agent, fake_google, "Hola")[0]
    Conversation.objects.unscoped().filter(pk=before.conversation_id).update(
        status=status, last_message_at=timezone.now() - timedelta(hours=idle_h)
    )
    after = _send(agent, fake_google, "¿Siguen ahí?")[0]
    old, messages = _rows(before.conversation_id)
    if kept_status is None:  # 23 h: still the same conversation
        assert after.conversation_id == before.conversation_id
        assert old.message_count == 4
        return
    assert after.conversation_id != before.conversation_id
    assert old.status == kept_status
    assert old.message_count == 2 and len(messages) == 2  # nothing joined the old one
    new, new_messages = _rows(after.conversation_id)
    assert [m.content for m in new_messages] == ["¿Siguen ahí?", "Re: ¿Siguen ahí?"]
    assert new.message_count == 2


@pytest.mark.django_db(transaction=True)
def test_a_closed_thread_after_a_known_thread_message_is_not_joined(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    """The conversation a known-thread message was stored in reaches the turn's statements
    through a transaction-local setting: it must end with that round trip, or the next
    message, which finds the conversation closed and stores nothing there, would take the
    turn of the old conversation and be answered in it."""
    agent = _agent(tenant_a)
    before = _send(agent, fake_google, "Hola")[0]
    known, round_trips = _send(agent, fake_google, "Una pregunta")
    assert (round_trips, known.conversation_id) == (3, before.conversation_id)
    Conversation.objects.unscoped().filter(pk=before.conversation_id).update(status="closed")

    after = _send(agent, fake_google, "¿Siguen ahí?")[0]

    assert after.conversation_id != before.conversation_id
    old, messages = _rows(before.conversation_id)
    assert (old.message_count, len(messages)) == (4, 4)
    assert [m.content for m in _rows(after.conversation_id)[1]] == [
        "¿Siguen ahí?",
        "Re: ¿Siguen ahí?",
    ]


@pytest.mark.django_db(transaction=True)
def test_the_stored_conversation_is_known_to_its_transaction_only(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    before = _send(agent, fake_google, "Hola")[0]
    prepared = message_prepare(
        agent=agent, inbound=Inbound(text="Otra", contact={"external_id": "ana"})
    )
    assert prepared is not None
    read = f"SELECT current_setting('{STORED_SETTING}', true)"

    with tenant_scope(tenant_a), connection.cursor() as cursor:
        with transaction.atomic():
            cursor.execute(*prepared.statement)
            cursor.execute(read)
            assert cursor.fetchone()[0] == str(before.conversation_id)
        cursor.execute(read)
        assert cursor.fetchone()[0] in ("", None)  # gone with the transaction


@pytest.mark.django_db(transaction=True)
def test_a_channel_messages_conversation_saved_updates_the_threads_row(
    tenant_a: Any, wa_binding: Any
) -> None:
    """A webhook's message stored into its thread's open conversation carries that
    conversation (only its id read: `lean`): a change saved on it updates the row, never
    tries to insert the conversation again."""
    inbound = Inbound(
        text="Hola",
        contact={"external_id": "ana"},
        channel="whatsapp",
        thread_id="t-ana",
        channel_message_id="wamid.s1",
    )
    first, _ = inbound_accept(binding=wa_binding, inbound=inbound, answers={})
    again = replace(inbound, text="¿Siguen ahí?", channel_message_id="wamid.s2")
    second, created = inbound_accept(binding=wa_binding, inbound=again, answers={})
    conversation = second.conversation
    assert created and conversation.pk == first.conversation_id

    conversation.channel_data = {"wa_id": "ana"}
    conversation.save(update_fields=["channel_data"])

    (row,) = Conversation.objects.unscoped().filter(tenant=tenant_a)
    assert (row.pk, row.channel_data, row.message_count) == (
        first.conversation_id,
        {"wa_id": "ana"},
        2,
    )
