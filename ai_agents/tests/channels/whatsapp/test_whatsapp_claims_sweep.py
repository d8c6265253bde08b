"""A reply a worker claimed ("pending") and died before handing over is sent by the sweep
(ai_agents.bulk_claimed_replies_sweep): once, only its parts never handed over, never while a
send may still be running, never once a person took the conversation over."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone, translation

from ai_agents.conversations.delivery import reply_deliver
from ai_agents.conversations.delivery_sweep import (
    INTERRUPTED,
    TAKEOVERS_MAX,
    claimed_reply_send,
    claims_sweep,
)
from ai_agents.models import Conversation, Delivery, Message
from ai_agents.rules.delivery_labels import delivery_error_label
from ai_agents.tasks import CLAIM_STALE_S, SEND_HARD_S, bulk_claimed_replies_sweep
from ai_agents.tests.channels.whatsapp.support import (
    payload,
    staff_reply,
    stale_conversation,
    wrote_hours_ago,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_graph import FakeGraph
from erp.testing.fake_http import FakeResponse

STALE = CLAIM_STALE_S + 30  # seconds: no send of the claim can still be running


@pytest.fixture
def conversation(client: Client, wa_binding: Any, tenant_a: Any, run_tasks: Any) -> Conversation:
    """Tenant A's WhatsApp conversation, its customer's last message an hour old (the window
    open); the tasks the sweep queues run in-process."""
    return stale_conversation(client, tenant_a, hours=1)


def _claimed(message: Message, age_s: float, *, claim_time: bool = True) -> None:
    """The message's send was claimed `age_s` seconds ago and never finished (the worker died);
    without a claim time (a row claimed before the column existed) it was created then."""
    when = timezone.now() - timedelta(seconds=age_s)
    with tenant_scope(message.tenant_id):
        Message.objects.filter(pk=message.pk).update(
            delivery_status="pending",
            delivery_claimed_at=when if claim_time else None,
            **({} if claim_time else {"created_at": when}),
        )


def _stored(message: Message) -> Message:
    with tenant_scope(message.tenant_id):
        return Message.objects.get(pk=message.pk)


def _deliveries(message: Message) -> list[Delivery]:
    with tenant_scope(message.tenant_id):
        return list(Delivery.objects.filter(message=message).order_by("part"))


@pytest.mark.django_db
@pytest.mark.parametrize("claim_time", [True, False], ids=["claimed", "claimed-before-0029"])
def test_a_claimed_reply_never_posted_is_sent_once_by_the_sweep(
    claim_time: bool, conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    reply = staff_reply(conversation, owner.user, "Su pedido sale hoy.")
    _claimed(reply, STALE, claim_time=claim_time)

    assert bulk_claimed_replies_sweep() == 1
    assert bulk_claimed_replies_sweep() == 0

    assert [b["text"]["body"] for b in fake_graph.sent] == ["Su pedido sale hoy."]
    [delivery] = _deliveries(reply)
    assert delivery.status == "sent" and delivery.external_id
    assert _stored(reply).delivery_status == "sent"


@pytest.mark.django_db
@pytest.mark.parametrize("age_s", [10, SEND_HARD_S - 10, SEND_HARD_S + 60])
def test_a_claim_whose_send_may_still_be_running_is_left_alone(
    age_s: float, conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    reply = staff_reply(conversation, owner.user, "Un momento, lo miro.")
    _claimed(reply, age_s)

    assert bulk_claimed_replies_sweep() == 0

    assert fake_graph.sent == []
    assert _stored(reply).delivery_status == "pending"


@pytest.mark.django_db
def test_a_part_already_handed_over_is_not_sent_again_the_others_are(
    conversation: Conversation, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    paragraphs = [f"Párrafo {n}. " + "texto " * 600 for n in range(3)]  # three parts
    reply = staff_reply(conversation, owner.user, "\n\n".join(p.strip() for p in paragraphs))
    with tenant_scope(tenant_a):  # part 0 went out; part 1's row was made, its POST never
        Delivery.objects.create(
            tenant=tenant_a, message=reply, channel="whatsapp", status="sent", external_id="w.0"
        )
        Delivery.objects.create(tenant=tenant_a, message=reply, channel="whatsapp", part=1)
    _claimed(reply, STALE)

    assert bulk_claimed_replies_sweep() == 1

    assert [b["text"]["body"] for b in fake_graph.sent] == [p.strip() for p in paragraphs[1:]]
    parts = _deliveries(reply)
    assert [(d.part, d.status) for d in parts] == [(0, "sent"), (1, "sent"), (2, "sent")]
    assert parts[0].external_id == "w.0" and len({d.external_id for d in parts}) == 3
    assert _stored(reply).delivery_status == "sent"


@pytest.mark.django_db
def test_a_person_who_took_over_meanwhile_keeps_the_bot_quiet(
    conversation: Conversation, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    with tenant_scope(tenant_a):
        bot = Message.objects.create(
            tenant=tenant_a,
            conversation=conversation,
            agent=conversation.agent,
            role="assistant",
            content="Respuesta del bot.",
        )
        Conversation.objects.filter(pk=conversation.pk).update(
            status="escalated", assigned_to=owner.user
        )
    _claimed(bot, STALE)

    assert bulk_claimed_replies_sweep() == 1

    assert fake_graph.sent == []
    assert _stored(bot).delivery_status == "suppressed"


@pytest.mark.django_db
def test_a_claim_older_than_a_day_is_marked_failed_not_sent(
    conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    reply = staff_reply(conversation, owner.user, "Demasiado tarde.")
    _claimed(reply, 25 * 3600, claim_time=False)

    assert bulk_claimed_replies_sweep() == 0

    assert fake_graph.sent == []
    stored = _stored(reply)
    assert stored.delivery_status == "failed"
    assert stored.metadata["delivery_error"]["code"] == INTERRUPTED
    with translation.override("en"):  # what the inbox shows
        assert delivery_error_label(INTERRUPTED) == "The send was interrupted and was not retried"


@pytest.mark.django_db
def test_a_message_stored_a_day_ago_with_a_recent_stale_claim_is_given_up_not_sent(
    conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    # given: a reply stored 25 h ago whose send a sweep took over an hour ago (claim moved)
    reply = staff_reply(conversation, owner.user, "Demasiado tarde.")
    with tenant_scope(reply.tenant_id):
        Message.objects.filter(pk=reply.pk).update(created_at=timezone.now() - timedelta(hours=25))
    _claimed(reply, STALE)

    assert bulk_claimed_replies_sweep() == 0

    assert fake_graph.sent == []
    assert _stored(reply).delivery_status == "failed"


@pytest.mark.django_db
def test_a_send_that_dies_at_every_take_over_is_given_up_after_three(
    conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    reply = staff_reply(conversation, owner.user, "Su pedido sale hoy.")
    _claimed(reply, STALE)
    taken: list[str] = []

    def dies(message_id: str, token: str) -> None:  # the worker dies before it sends
        taken.append(message_id)

    for _sweep in range(TAKEOVERS_MAX + 2):
        claims_sweep(stale_s=CLAIM_STALE_S, send=dies)
        with tenant_scope(reply.tenant_id):  # its claim grows stale again
            Message.objects.filter(pk=reply.pk).update(
                delivery_claimed_at=timezone.now() - timedelta(seconds=STALE)
            )

    assert taken == [str(reply.pk)] * TAKEOVERS_MAX
    stored = _stored(reply)
    assert stored.delivery_status == "failed"
    assert stored.metadata["delivery_error"]["code"] == INTERRUPTED
    assert fake_graph.sent == []


@pytest.mark.django_db
def test_a_resend_after_the_window_closed_keeps_the_part_that_left(
    conversation: Conversation, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    # given: part 0 of a two-part reply left, the worker died, the window has closed since
    paragraphs = [f"Párrafo {n}. " + "texto " * 600 for n in range(2)]
    reply = staff_reply(conversation, owner.user, "\n\n".join(p.strip() for p in paragraphs))
    with tenant_scope(tenant_a):
        Delivery.objects.create(
            tenant=tenant_a, message=reply, channel="whatsapp", status="sent", external_id="w.0"
        )
        Delivery.objects.create(tenant=tenant_a, message=reply, channel="whatsapp", part=1)
    wrote_hours_ago(conversation, 25)
    _claimed(reply, STALE)

    assert bulk_claimed_replies_sweep() == 1

    # then: nothing is sent (no template), the part that left stays sent, the other failed
    assert fake_graph.sent == []
    parts = _deliveries(reply)
    assert [(d.part, d.status, d.external_id) for d in parts] == [
        (0, "sent", "w.0"),
        (1, "failed", None),
    ]
    assert parts[1].error_code == "outside_24h_window"


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_send_each_reply_once(
    conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    before = len(fake_graph.sent)
    replies = [staff_reply(conversation, owner.user, f"Respuesta {n}.") for n in range(5)]
    for reply in replies:
        _claimed(reply, STALE)
    start = threading.Barrier(2, timeout=deadlines.WAIT_S)
    queued: list[tuple[str, str]] = []  # the send tasks both sweeps queued

    def sweep() -> None:
        try:
            start.wait()
            claims_sweep(stale_s=CLAIM_STALE_S, send=lambda *task: queued.append(task))
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)
    # The queued tasks run afterwards, one by one (an eager Celery task run from two threads
    # at once leaves Celery's process-wide "join would block" flag set for later tests).
    for message_id, token in queued:
        claimed_reply_send(message_id, token)

    assert sorted(message_id for message_id, _ in queued) == sorted(str(r.pk) for r in replies)
    bodies = sorted(b["text"]["body"] for b in fake_graph.sent[before:])
    assert bodies == [r.content for r in replies]
    assert {_stored(r).delivery_status for r in replies} == {"sent"}


@pytest.mark.django_db(transaction=True)
def test_a_send_taken_over_while_slow_stops_before_its_next_part(
    conversation: Conversation, fake_graph: FakeGraph, owner: Any
) -> None:
    # given: a three-part staff reply whose first POST Graph answers slowly
    paragraphs = [f"Párrafo {n}. " + "texto " * 600 for n in range(3)]
    reply = staff_reply(conversation, owner.user, "\n\n".join(p.strip() for p in paragraphs))
    before = len(fake_graph.sent)
    fake_graph.push(FakeResponse.json(payload("send_text_response"), delay=1.0))
    statuses: list[str] = []

    def send() -> None:
        try:
            statuses.append(reply_deliver(reply.pk))
        finally:
            connection.close()

    sender = threading.Thread(target=send)
    sender.start()
    deadlines.wait_until(lambda: len(fake_graph.sent) > before, what="the first part's POST")
    # when: meanwhile the sweep takes the send over (its claim time moves)
    with tenant_scope(reply.tenant_id):
        Message.objects.filter(pk=reply.pk).update(delivery_claimed_at=timezone.now())
    deadlines.threads_join([sender])

    # then: the slow sender stopped after the part in flight; the rest is the sweep's
    bodies = [b["text"]["body"] for b in fake_graph.sent[before:]]
    assert bodies == [paragraphs[0].strip()]
    assert [(d.part, d.status) for d in _deliveries(reply)] == [(0, "sent")]
