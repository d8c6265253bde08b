"""A webhook's text message for a known thread (its conversation open) is stored in ONE round
trip (no BEGIN, savepoint or COMMIT, no binding read: the lookup is cached), and a redelivery
of it stores nothing more. Outside a test transaction, as uvicorn runs the webhook; counted
as `test_whatsapp_first_message` counts a thread's first message."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ai_agents.channels.whatsapp import bindings
from ai_agents.models import ChannelBinding
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_A,
    conversations,
    post,
    text_payload,
    user_messages,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_known_threads_message_is_stored_in_one_round_trip(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    # The forgets the binding's creation published may still be in flight: one heard after
    # the first POST would drop the copy it kept, and the second would read the database.
    assert bindings._local.settled()
    post(client, text_payload("hola", "wamid.k1"))  # opens the conversation
    assert bindings.local_has(NUMBER_A)
    with CaptureQueriesContext(connection) as queries:
        response = post(client, text_payload("una pregunta", "wamid.k2"))

    sql = [q["sql"] for q in queries.captured_queries]
    (conversation,) = conversations(tenant_a)
    assert response.json() == {"status": "ok", "stored": 1}
    assert len(sql) == 1, sql
    assert not [s for s in sql if "SAVEPOINT" in s or s in ("BEGIN", "COMMIT")]
    assert (conversation.message_count, conversation.customer_messages) == (2, 2)
    assert [m.content for m in user_messages(tenant_a)] == ["hola", "una pregunta"]


def test_a_redelivered_known_thread_message_is_stored_once(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    post(client, text_payload("hola", "wamid.k3"))
    first = post(client, text_payload("¿tienen envío a Saltillo?", "wamid.k4"))
    again = post(client, text_payload("¿tienen envío a Saltillo?", "wamid.k4"))

    (conversation,) = conversations(tenant_a)
    assert (first.json()["stored"], again.json()["stored"]) == (1, 0)
    assert (conversation.message_count, conversation.customer_messages) == (2, 2)
    assert [m.channel_message_id for m in user_messages(tenant_a)] == ["wamid.k3", "wamid.k4"]
