"""While the Graph API takes its time to answer a send (or a retry waits), the sending thread
holds no database connection: with tens of real-time threads sending at once, one checked out
per slow POST would empty the pool (DB_POOL_MAX_SIZE) for everything else."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from ai_agents.conversations.delivery import reply_deliver
from ai_agents.tests.channels.whatsapp.support import payload, staff_reply, stale_conversation
from erp.testing import deadlines
from erp.testing.fake_graph import FakeGraph
from erp.testing.fake_http import FakeResponse
from erp.testing.fixtures import owner_connection

GRAPH_SLOW_S = 1.5


_APP_BACKENDS = """
SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND datname = current_database()
"""


def _checked_out() -> int:
    """Connections of the app's role open right now (the tests run without a pool: a
    connection given back is closed; with one, `connection_release` returns it instead)."""
    assert not settings.DATABASES["default"]["OPTIONS"].get("pool")  # else: the pool's stats
    with owner_connection() as owner:
        (count,) = owner.execute(_APP_BACKENDS, [settings.DATABASES["default"]["USER"]]).fetchone()
    return int(count)


@pytest.mark.django_db(transaction=True)
def test_no_connection_is_held_while_graph_answers_a_send(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    conversation = stale_conversation(client, tenant_a, hours=1)
    reply = staff_reply(conversation, owner.user, "Su pedido sale hoy.")
    fake_graph.push(FakeResponse.json(payload("send_text_response"), delay=GRAPH_SLOW_S))
    before = _checked_out()  # this thread's own, if it holds one
    statuses: list[str] = []

    def deliver() -> None:
        try:
            statuses.append(reply_deliver(reply.pk))
        finally:
            connection.close()

    sender = threading.Thread(target=deliver)
    sender.start()
    deadlines.wait_until(lambda: fake_graph.posts, what="the send reaches the Graph API")
    during = _checked_out()
    deadlines.threads_join([sender])

    assert during == before  # the sender's connection went back before the POST
    assert statuses == ["sent"]
    assert [b["text"]["body"] for b in fake_graph.sent] == ["Su pedido sale hoy."]
