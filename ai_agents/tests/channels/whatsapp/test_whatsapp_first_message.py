"""A webhook's first message for a thread (no open conversation) opens the conversation and
stores the message in one round trip after the one that found none (no BEGIN, savepoint or
COMMIT): the new conversation follows the thread's previous one of the same tenant only, and a
comment after a rating still goes to the closed conversation. Outside a test transaction, as
uvicorn runs the webhook."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ai_agents.models import ChannelBinding, Contact, Conversation
from ai_agents.services.rating import _comment_key
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_A,
    NUMBER_B,
    WA_ID,
    binding_create,
    conversations,
    post,
    text_payload,
)
from erp.tenancy.scoping import tenant_scope

pytestmark = pytest.mark.django_db(transaction=True)


def _close(tenant: Any, **extra: Any) -> None:
    with tenant_scope(tenant):
        Conversation.objects.update(status=Conversation.Status.CLOSED, **extra)


def test_a_new_conversation_takes_two_round_trips_and_follows_the_previous_one(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any, tenant_b: Any
) -> None:
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    post(client, text_payload("hola", "wamid.f1"))
    post(client, text_payload("hola B", "wamid.f1b", number=NUMBER_B))  # same customer, B
    _close(tenant_a)
    with CaptureQueriesContext(connection) as queries:
        response = post(client, text_payload("otra consulta", "wamid.f2"))

    first, second = conversations(tenant_a)
    (only_b,) = conversations(tenant_b)
    sql = [q["sql"] for q in queries.captured_queries]
    assert response.json() == {"status": "ok", "stored": 1}
    assert len(sql) == 2 and not [s for s in sql if "SAVEPOINT" in s or s == "BEGIN"]
    assert (second.status, second.message_count, second.customer_messages) == ("active", 1, 1)
    assert (second.previous_conversation_id, second.contact_id) == (first.pk, first.contact_id)
    assert second.binding_id == wa_binding.pk
    assert only_b.previous_conversation_id is None and only_b.message_count == 1


def test_a_redelivered_first_message_opens_no_second_conversation(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    post(client, text_payload("hola", "wamid.r1"))
    _close(tenant_a)
    post(client, text_payload("vuelvo", "wamid.r2"))
    again = post(client, text_payload("vuelvo", "wamid.r2"))

    assert again.json() == {"status": "ok", "stored": 0}
    assert [c.message_count for c in conversations(tenant_a)] == [1, 1]


def test_a_comment_after_the_rating_goes_to_the_closed_conversation(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    post(client, text_payload("hola", "wamid.k1"))
    _close(tenant_a, satisfaction_rating=4)
    cache.set(_comment_key(tenant_a.pk, wa_binding.agent_id, f"{NUMBER_A}:{WA_ID}"), "1", 60)
    post(client, text_payload("Muy amables, gracias", "wamid.k2"))

    (closed,) = conversations(tenant_a)
    assert (closed.status, closed.feedback_text) == ("closed", "Muy amables, gracias")


def test_a_senders_first_message_taken_as_a_comment_still_gives_them_a_contact(
    client: Client, wa_binding: ChannelBinding, tenant_a: Any
) -> None:
    """The thread's rated conversation outlived its contact (deleted by the staff: the
    conversation keeps no contact): the comment that comes next is this sender's first
    message as a contact, and the contacts list and the inbox need their row."""
    post(client, text_payload("hola", "wamid.n1"))
    _close(tenant_a, satisfaction_rating=5)
    with tenant_scope(tenant_a):
        Contact.objects.filter(external_id=WA_ID).delete()
    cache.set(_comment_key(tenant_a.pk, wa_binding.agent_id, f"{NUMBER_A}:{WA_ID}"), "1", 60)

    post(client, text_payload("Todo perfecto", "wamid.n2"))

    (closed,) = conversations(tenant_a)
    assert closed.feedback_text == "Todo perfecto"
    with tenant_scope(tenant_a):
        assert list(Contact.objects.values_list("external_id", "phone")) == [(WA_ID, f"+{WA_ID}")]
