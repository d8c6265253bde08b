"""While the Graph API takes its time to answer a send (or a retry waits), the sending thread
holds no database connection: with tens of real-time threads sending at once, one checked out
per slow POST would empty the pool (DB_POOL_MAX_SIZE) for everything else."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError, connection
from django.test import Client

from ai_agents.conversations.delivery import reply_deliver
from ai_agents.models import Delivery
from ai_agents.tests.channels.whatsapp.support import payload, staff_reply, stale_conversation
from erp import db
from erp.retry import Backoff
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


@pytest.mark.django_db(transaction=True)
def test_a_wamid_is_stored_when_the_first_try_to_store_it_fails(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    owner: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the POST the connection must be checked out again; a drained pool times out. The
    part has left: its wamid is stored on a later try, or the sweep would send it again."""
    conversation = stale_conversation(client, tenant_a, hours=1)
    reply = staff_reply(conversation, owner.user, "Su pedido sale hoy.")
    sent = payload("send_text_response")
    fake_graph.push(FakeResponse.json(sent))
    monkeypatch.setattr(db, "WRITE_BACKOFF", Backoff(attempts=4, base_delay_s=0.01))
    save, failed = Delivery.save, list[Any]()

    def pool_timeout_once(self: Delivery, *args: Any, **kwargs: Any) -> None:
        if "external_id" in (kwargs.get("update_fields") or ()) and not failed:
            failed.append(self.pk)
            raise OperationalError("couldn't get a connection after 30.00 sec")
        save(self, *args, **kwargs)

    monkeypatch.setattr(Delivery, "save", pool_timeout_once)

    assert reply_deliver(reply.pk) == "sent"
    assert len(failed) == 1 and len(fake_graph.sent) == 1
    delivery = Delivery.objects.for_tenant(tenant_a).get(message_id=reply.pk)
    assert (delivery.status, delivery.external_id) == ("sent", sent["messages"][0]["id"])
