"""Answering a message writes its rows no more often than it must (PostgreSQL's CPU per
message, bench/pipeline.py): the conversation's guarded UPDATE gives the turn back with the
counters, and the attempt is counted in a column no index reads (a HOT update is possible: no
index entry rewritten,
the GIN of its text included); only its result rewrites them (it leaves `msg_unanswered`)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection

from ai_agents.conversations.engine import message_process
from ai_agents.conversations.inbound import Inbound
from ai_agents.models import Agent, Message
from ai_agents.services.agents import agent_create
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.fake_google import FakeGoogle

FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}

# This transaction's row updates per table.
_UPDATES = "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = %s"


def _updates(table: str) -> tuple[int]:
    with connection.cursor() as cursor:
        cursor.execute(_UPDATES, [table])
        (updated,) = cursor.fetchone()
    return (int(updated),)


def _send(agent: Agent, fake: FakeGoogle, text: str) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": f"Re: {text}"}))
    result = message_process(
        agent=agent, inbound=Inbound(text=text, contact={"external_id": "ana"})
    )
    assert result.reply is not None


@pytest.mark.django_db
def test_a_message_on_a_known_thread_updates_the_conversation_three_times_the_message_twice(
    tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = agent_create(
        tenant=tenant_a,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )
    _send(agent, fake_google, "Hola")  # opens the conversation
    conversation_before, message_before = (
        _updates("ai_agents_conversation"),
        _updates("ai_agents_message"),
    )

    _send(agent, fake_google, "¿Abren mañana?")

    conversation_after, message_after = (
        _updates("ai_agents_conversation"),
        _updates("ai_agents_message"),
    )
    # Stored with its counters, the turn taken, the reply's counters with the turn given back.
    assert conversation_after[0] - conversation_before[0] == 3
    # The attempt counted, then the result stored: two updates of the message. Counting can be
    # a HOT update (no index entry rewritten, the GIN of its text included) because no index
    # reads the column (whether PostgreSQL manages one also depends on free room in the page).
    assert message_after[0] - message_before[0] == 2
    assert _indexes_reading("ai_agents_message", "attempts") == []


def _indexes_reading(table: str, column: str) -> list[str]:
    """The table's indexes whose keys, expressions or predicate name the column."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return [name for name, definition in cursor.fetchall() if column in definition]


@pytest.mark.django_db
def test_migration_0028_carries_the_unanswered_counts_to_the_column_and_back(
    tenant_a: Any,
) -> None:
    carrying = importlib.import_module("ai_agents.migrations.0028_message_attempts")
    agent = agent_for(tenant_a)
    messages = Message.objects.for_tenant(tenant_a.pk)
    waiting, answered, odd = (
        messages.get(conversation=conversation_make(agent, status="active", thread=t), role="user")
        for t in ("w", "a", "o")
    )
    for message, metadata in (
        (waiting, {"attempts": 2}),
        (answered, {"attempts": 1, "result": {}}),
        (odd, {"attempts": None}),
    ):
        messages.filter(pk=message.pk).update(metadata=metadata)
    editor = SimpleNamespace(connection=connection)

    carrying.carry(None, editor)
    counts = dict(messages.values_list("pk", "attempts"))
    assert (counts[waiting.pk], counts[answered.pk], counts[odd.pk]) == (2, 0, 0)

    Message.objects.for_tenant(tenant_a.pk).filter(pk=waiting.pk).update(attempts=3, metadata={})
    carrying.carry_back(None, editor)
    back = messages.get(pk=waiting.pk)
    assert back.metadata == {"attempts": 3}
