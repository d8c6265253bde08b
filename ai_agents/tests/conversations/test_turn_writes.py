"""Answering a message writes its rows no more often than it must (PostgreSQL's CPU per
message, bench/pipeline.py): the conversation's guarded UPDATE gives the turn back with the
counters, and counting the attempt is a HOT update of the message (no index entry rewritten,
the GIN of its text included); only its result rewrites them (it leaves `msg_unanswered`)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from ai_agents.conversations.engine import message_process
from ai_agents.conversations.inbound import Inbound
from ai_agents.models import Agent
from ai_agents.services.agents import agent_create
from erp.testing.fake_google import FakeGoogle

FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}

# This transaction's row updates per table, and how many of them were HOT.
_UPDATES = "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s"


def _updates(table: str) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(_UPDATES, [table])
        updated, hot = cursor.fetchone()
    return int(updated), int(hot)


def _send(agent: Agent, fake: FakeGoogle, text: str) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": f"Re: {text}"}))
    result = message_process(
        agent=agent, inbound=Inbound(text=text, contact={"external_id": "ana"})
    )
    assert result.reply is not None


@pytest.mark.django_db
def test_a_message_on_a_known_thread_updates_the_conversation_three_times_and_its_indexes_once(
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
    updated, hot = message_after[0] - message_before[0], message_after[1] - message_before[1]
    assert (updated, updated - hot) == (2, 1)  # the attempt counted (HOT), the result stored
