"""Replies through the Graph API: exact request bodies, typing indicator, 4096-character
parts, retries, permanent errors, status webhooks in any order, and the 24-hour window."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from ai_agents.channels.whatsapp.bodies import text_split
from ai_agents.conversations.delivery import reply_deliver
from ai_agents.models import Delivery, Message
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_B,
    WA_ID,
    Line,
    binding_create,
    payload,
    post,
    staff_reply,
    stale_conversation,
    with_number,
)
from ai_agents.tests.channels.whatsapp.templates_support import SURVEY, bot_template_set
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import FakeGraph
from erp.testing.fake_http import FakeResponse

INBOUND_ID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="  # whatsapp_text
SENT_ID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJCOTY3NDc0NDFDRUI3NTA0Q0UA"  # send response, statuses


def _deliveries(message: Message) -> list[Delivery]:
    with tenant_scope(message.tenant_id):
        return list(Delivery.objects.filter(message=message).order_by("part"))


@pytest.mark.django_db
def test_a_reply_marks_read_with_typing_then_sends_the_exact_text_body(line: Line) -> None:
    reply = line.customer_writes(
        "We are open 9:00-17:00 on Saturdays.", FakeResponse.json(payload("send_text_response"))
    )

    typing, send = line.graph.requests
    assert typing.path == "/v24.0/106540352242922/messages"
    assert typing.json() == payload("mark_read_typing_request")
    assert typing.json()["message_id"] == INBOUND_ID
    assert send.json() == payload("send_text_request")
    assert send.header("authorization") == "Bearer EAAG-token-a"
    assert reply.delivery_status == "sent"
    [delivery] = _deliveries(reply)
    assert (delivery.external_id, delivery.status, delivery.attempts) == (SENT_ID, "sent", 1)


def test_text_split_prefers_paragraphs_then_sentences_then_words() -> None:
    para = "a" * 3000 + "\n\n" + "b" * 3000
    assert text_split(para) == ["a" * 3000, "b" * 3000]
    sentences = ("Frase corta. " * 400).strip()  # 5199 characters, no paragraph
    parts = text_split(sentences)
    assert all(len(p) <= 4096 for p in parts) and len(parts) == 2
    assert parts[0].endswith(".") and parts[1].startswith("Frase")
    words = " ".join(["palabra"] * 1000)
    parts = text_split(words)
    assert all(len(p) <= 4096 for p in parts)
    assert " ".join(parts) == words
    assert text_split("x" * 5000) == ["x" * 4096, "x" * 904]
    assert text_split("  hola  ") == ["hola"]


@pytest.mark.django_db
def test_a_long_reply_goes_out_in_parts_of_at_most_4096_one_delivery_each(line: Line) -> None:
    paragraphs = [f"Párrafo {n}. " + "texto " * 600 for n in range(3)]  # ~3,600 chars each
    reply = line.customer_writes("\n\n".join(p.strip() for p in paragraphs))

    bodies = [b["text"]["body"] for b in line.graph.sent]
    assert bodies == [p.strip() for p in paragraphs]
    assert all(len(b) <= 4096 for b in bodies)
    assert [(d.part, d.status) for d in _deliveries(reply)] == [
        (0, "sent"),
        (1, "sent"),
        (2, "sent"),
    ]
    assert len({d.external_id for d in _deliveries(reply)}) == 3
    assert reply.delivery_status == "sent"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "errors",
    [
        [FakeGraph.error(130429), FakeGraph.error(500, status=500)],
        [FakeGraph.error(131056), FakeGraph.error(131056)],
        [FakeResponse(status=503, body=b"<html>busy</html>")],
    ],
    ids=["throughput-then-5xx", "pair-rate-limit", "5xx-not-json"],
)
def test_throttling_and_server_errors_are_retried_then_succeed(
    errors: list[FakeResponse], line: Line
) -> None:
    reply = line.customer_writes("Hola.", *errors)

    assert [b["text"]["body"] for b in line.graph.sent] == ["Hola."] * (len(errors) + 1)
    [delivery] = _deliveries(reply)
    assert (delivery.status, delivery.attempts, delivery.error_code) == (
        "sent",
        len(errors) + 1,
        "",
    )
    assert reply.delivery_status == "sent"


@pytest.mark.django_db
def test_a_permanent_error_is_recorded_on_the_delivery_and_the_message_without_retry(
    line: Line,
) -> None:
    reply = line.customer_writes(
        "Hola.", FakeResponse.json(payload("error_131026_response"), status=400)
    )

    assert len(line.graph.sent) == 1
    [delivery] = _deliveries(reply)
    assert (delivery.status, delivery.error_code, delivery.error_message) == (
        "failed",
        "131026",
        "Message Undeliverable.",
    )
    assert reply.delivery_status == "failed"
    assert reply.metadata["delivery_error"] == {
        "code": "131026",
        "message": "Message Undeliverable.",
    }


@pytest.mark.django_db
def test_retries_stop_after_the_configured_attempts(line: Line, settings: Any) -> None:
    settings.WHATSAPP_SEND_ATTEMPTS = 3
    throttled = FakeResponse.json(payload("error_130429_response"), status=400)
    reply = line.customer_writes("Hola.", *[throttled] * 5)

    assert len(line.graph.sent) == 3
    [delivery] = _deliveries(reply)
    assert (delivery.status, delivery.error_code, delivery.attempts) == ("failed", "130429", 3)


# --- statuses --------------------------------------------------------------------------------


def _status(name: str, wamid: str = SENT_ID) -> dict[str, Any]:
    data = copy.deepcopy(payload(name))
    data["entry"][0]["changes"][0]["value"]["statuses"][0]["id"] = wamid
    return data


@pytest.fixture
def sent_reply(line: Line) -> Message:
    return line.customer_writes("Hola.", FakeResponse.json(payload("send_text_response")))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "order",
    [
        ["status_sent", "status_delivered", "status_read"],
        ["status_read", "status_delivered", "status_sent"],
        ["status_delivered", "status_read", "status_sent_legacy_conversation", "status_read"],
    ],
    ids=["in-order", "reversed", "repeated"],
)
def test_statuses_in_any_order_end_at_the_most_advanced(
    order: list[str], client: Client, sent_reply: Message
) -> None:
    for name in order:
        assert post(client, _status(name)).status_code == 200

    [delivery] = _deliveries(sent_reply)
    sent_reply.refresh_from_db()
    assert (delivery.status, sent_reply.delivery_status) == ("read", "read")
    assert delivery.status_at is not None and delivery.status_at.timestamp() == 1749416420


@pytest.mark.django_db
def test_a_failed_status_is_recorded_with_its_code_and_a_late_delivered_does_not_undo_it(
    client: Client, sent_reply: Message
) -> None:
    post(client, _status("status_failed_131026"))
    post(client, _status("status_delivered"))

    [delivery] = _deliveries(sent_reply)
    sent_reply.refresh_from_db()
    assert (delivery.status, delivery.error_code, delivery.error_message) == (
        "failed",
        "131026",
        "Message Undeliverable.",
    )
    assert sent_reply.delivery_status == "failed"
    assert sent_reply.metadata["delivery_error"]["code"] == "131026"


@pytest.mark.django_db
def test_statuses_arriving_before_the_send_stored_the_wamid_are_applied_by_the_send(
    line: Line, client: Client, tenant_a: Any, tenant_b: Any
) -> None:
    """Meta may report a message before its answer to our POST (with the wamid) is stored:
    the statuses wait for the wamid. One sent on another tenant's number never applies."""
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    other = with_number(_status("status_failed_131026"), NUMBER_B)
    for data in (_status("status_delivered"), _status("status_sent"), other):
        assert post(client, data).status_code == 200
    with tenant_scope(tenant_a):
        assert not Delivery.objects.exists()

    reply = line.customer_writes("Hola.", FakeResponse.json(payload("send_text_response")))

    [delivery] = _deliveries(reply)
    assert (delivery.external_id, delivery.status, delivery.error_code) == (
        SENT_ID,
        "delivered",
        "",
    )
    assert reply.delivery_status == "delivered"
    reported = _status("status_delivered")["entry"][0]["changes"][0]["value"]["statuses"][0]
    assert delivery.status_at is not None
    assert delivery.status_at.timestamp() == int(reported["timestamp"])
    # Applied once: a later read still moves it forward, a repeated delivered changes nothing.
    post(client, _status("status_read"))
    delivery.refresh_from_db()
    assert delivery.status == "read"


@pytest.mark.django_db
def test_a_status_for_an_unknown_wamid_is_ignored(client: Client, sent_reply: Message) -> None:
    assert post(client, _status("status_read", "wamid.not-ours")).status_code == 200
    [delivery] = _deliveries(sent_reply)
    assert delivery.status == "sent"


@pytest.mark.django_db
def test_a_message_in_parts_reports_its_least_advanced_part(line: Line, client: Client) -> None:
    reply = line.customer_writes("a" * 3000 + "\n\n" + "b" * 3000)
    first, second = _deliveries(reply)
    assert first.external_id is not None and second.external_id is not None

    post(client, _status("status_read", first.external_id))
    post(client, _status("status_delivered", second.external_id))

    reply.refresh_from_db()
    assert reply.delivery_status == "delivered"


# --- a send a worker left half done ----------------------------------------------------------


@pytest.mark.django_db
def test_a_part_an_earlier_run_handed_over_is_not_sent_again_a_pending_one_is(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    """A worker died after recording a part's delivery and before marking the message: the
    next run reuses that row (one per message and part) and sends only what is still pending."""
    conversation = stale_conversation(client, tenant_a, hours=1)
    sent = staff_reply(conversation, owner.user, "Ya salió su pedido.")
    waiting = staff_reply(conversation, owner.user, "Le escribo el número de guía.")
    with tenant_scope(tenant_a):
        done = Delivery.objects.create(
            tenant=tenant_a, message=sent, channel="whatsapp", status="sent", external_id="wamid.1"
        )
        left = Delivery.objects.create(tenant=tenant_a, message=waiting, channel="whatsapp")

    assert reply_deliver(sent.pk) == "sent"
    assert fake_graph.sent == []  # handed over already: never twice
    assert [d.pk for d in _deliveries(sent)] == [done.pk]

    assert reply_deliver(waiting.pk) == "sent"
    assert [body["text"]["body"] for body in fake_graph.sent] == ["Le escribo el número de guía."]
    [delivery] = _deliveries(waiting)
    assert delivery.pk == left.pk and delivery.status == "sent" and delivery.external_id


# --- the 24-hour window ----------------------------------------------------------------------


@pytest.mark.django_db
def test_inside_the_window_a_staff_reply_goes_out_as_text(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    conversation = stale_conversation(client, tenant_a, hours=23)
    message = staff_reply(conversation, owner.user, "Soy Marta, del equipo.")

    assert reply_deliver(message.pk) == "sent"
    assert fake_graph.sent == [
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": WA_ID,
            "type": "text",
            "text": {"preview_url": False, "body": "Soy Marta, del equipo."},
        }
    ]


@pytest.mark.django_db
def test_outside_the_window_the_configured_template_is_sent_instead(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph, owner: Any
) -> None:
    bot_template_set(fake_graph, wa_binding, SURVEY)  # approved, synced, no variables
    conversation = stale_conversation(client, tenant_a, hours=25)
    fake_graph.push(FakeResponse.json(payload("send_template_response")))
    message = staff_reply(conversation, owner.user, "Su pedido ya salió.")

    assert reply_deliver(message.pk) == "sent"
    assert fake_graph.sent == [
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": WA_ID,
            "type": "template",
            "template": {"name": "encuesta", "language": {"code": "es"}},
        }
    ]
    [delivery] = _deliveries(message)
    assert delivery.external_id == "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJFM0Y0QTVCNkM3RDhFOUYwQTEA"


@pytest.mark.django_db
def test_outside_the_window_without_a_template_nothing_is_sent_and_it_is_recorded(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    owner: Any,
    caplog: Any,
    run_tasks: Any,
) -> None:
    from django.core import mail

    conversation = stale_conversation(client, tenant_a, hours=25)
    message = staff_reply(conversation, owner.user, "¿Sigue ahí?")
    mail.outbox.clear()

    with run_tasks():
        assert reply_deliver(message.pk) == "failed"
    assert fake_graph.requests == []
    [delivery] = _deliveries(message)
    assert (delivery.status, delivery.error_code) == ("failed", "outside_24h_window")
    message.refresh_from_db()
    assert message.delivery_status == "failed"
    assert message.metadata["delivery_error"]["code"] == "outside_24h_window"
    assert "whatsapp.outside_window" in caplog.text
    # The team hears about it (the handoff notice by e-mail).
    assert len(mail.outbox) == 1
    assert "24 horas" in mail.outbox[0].body


@pytest.mark.django_db
def test_a_failing_read_mark_does_not_hold_back_the_reply(line: Line) -> None:
    line.graph.read_mark_response = FakeGraph.error(190, status=401)
    reply = line.customer_writes("Hola.")

    assert len(line.graph.read_marks) == 1
    assert [b["text"]["body"] for b in line.graph.sent] == ["Hola."]
    assert reply.delivery_status == "sent"


@pytest.mark.django_db
def test_statuses_still_reach_a_binding_deactivated_after_sending(
    client: Client, wa_binding: Any, sent_reply: Message
) -> None:
    wa_binding.is_active = False
    wa_binding.save(update_fields=["is_active"])

    post(client, _status("status_read"))

    sent_reply.refresh_from_db()
    assert sent_reply.delivery_status == "read"
