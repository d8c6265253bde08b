"""The customer's side of a handoff on WhatsApp, against the local Graph fake: notices when the
tenant enables them (and not otherwise), the rating offered at close and answered by a list or
button reply or a bare "5" (never sent to the bot), a comment after it, the typing indicator
when a person types or replies, and delivery states with their reason in words."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from ai_agents.models import Conversation, Delivery, HandoffSettings, Message
from ai_agents.services.handoff import (
    conversation_claim,
    conversation_close,
    conversation_reply,
)
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_B,
    WA_ID,
    binding_create,
    payload,
    post,
    respond,
    text_payload,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.fixtures import Persona

FIRST_ID = "wamid.customer-first"


def _notices_on(tenant: Any, *, on: bool = True) -> None:
    HandoffSettings.objects.for_tenant(tenant).update_or_create(
        tenant=tenant, defaults={"customer_notices": on}
    )


def _conversation(tenant: Any) -> Conversation:
    with tenant_scope(tenant):
        return Conversation.objects.order_by("-started_at").first()  # type: ignore[return-value]  # the test has just made one


def _started(
    client: Client, fake_google: FakeGoogle, run_tasks: Any, tenant: Any, *, wamid: str = FIRST_ID
) -> Conversation:
    respond(fake_google, "Claro, ¿qué necesita?")
    with run_tasks():
        post(client, text_payload("Hola, necesito ayuda con mi pedido", wamid))
    return _conversation(tenant)


def _reply(reply_id: str, *, kind: str, text: str = "") -> dict[str, Any]:
    """The customer's answer: a text, or a list/button reply to our rating list."""
    if kind == "text":
        return text_payload(text, reply_id)
    data = copy.deepcopy(payload(f"interactive_{kind}"))
    message = data["entry"][0]["changes"][0]["value"]["messages"][0]
    body = {"id": "rating:4", "title": "4 ★★★★"}
    message.update({"id": reply_id, "from": WA_ID, "interactive": {"type": kind, kind: body}})
    return data


@pytest.mark.django_db
def test_notices_go_out_only_when_the_tenant_enables_them_and_once_per_event(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    conversation = _started(client, fake_google, run_tasks, tenant_a)
    fake_graph.reset()
    with run_tasks():
        conversation = conversation_claim(conversation, owner.user)  # not enabled: nothing
    assert fake_graph.sent == []

    conversation_close(conversation, owner.user)
    _notices_on(tenant_a)
    conversation = _started(client, fake_google, run_tasks, tenant_a, wamid="wamid.second")
    fake_graph.reset()
    with run_tasks():
        conversation = conversation_claim(conversation, owner.user)
        conversation_claim(conversation, owner.user)  # a double click: one notice
    assert [b["text"]["body"] for b in fake_graph.sent] == [
        "Una persona del equipo le atiende a partir de ahora."
    ]
    assert fake_graph.sent[0]["to"] == WA_ID


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["list_reply", "button_reply"])
def test_the_close_offers_a_rating_list_answered_by_a_reply_then_a_comment(
    kind: str,
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    api_a: APIClient,
) -> None:
    _notices_on(tenant_a)
    conversation = _started(client, fake_google, run_tasks, tenant_a)
    fake_graph.reset()
    with run_tasks():
        conversation_close(conversation, owner.user)
    [offer] = fake_graph.sent
    assert offer["type"] == "interactive"
    interactive = offer["interactive"]
    assert interactive["type"] == "list"
    assert interactive["body"]["text"].startswith(
        "Hemos cerrado esta conversación. ¡Gracias por escribirnos!\n\n¿Cómo valoraría"
    )
    rows = interactive["action"]["sections"][0]["rows"]
    assert [r["id"] for r in rows] == ["rating:5", "rating:4", "rating:3", "rating:2", "rating:1"]
    assert all(len(r["title"]) <= 24 for r in rows)

    calls = len(fake_google.generate_requests)
    fake_graph.reset()
    with run_tasks():
        assert post(client, _reply("wamid.rate", kind=kind)).status_code == 200
        post(client, _reply("wamid.rate", kind=kind))  # Meta redelivers it
    row = Conversation.objects.for_tenant(tenant_a).get(pk=conversation.pk)
    assert row.satisfaction_rating == 4
    assert len(fake_google.generate_requests) == calls  # not sent to the bot
    assert [b["text"]["body"] for b in fake_graph.sent] == [
        "¡Gracias por su valoración! Si quiere, escríbanos ahora un comentario."
    ]
    assert Conversation.objects.for_tenant(tenant_a).count() == 1  # no new conversation

    with run_tasks():
        post(client, _reply("wamid.comment", kind="text", text="Muy amables, gracias"))
    detail = api_a.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert (detail["satisfaction_rating"], detail["feedback_text"]) == (4, "Muy amables, gracias")
    assert fake_graph.sent[-1]["text"]["body"] == "Gracias por su comentario."
    assert len(fake_google.generate_requests) == calls

    # After the comment, the customer's next message is a new conversation for the bot.
    respond(fake_google, "¿En qué más le ayudo?")
    with run_tasks():
        post(client, _reply("wamid.later", kind="text", text="Otra pregunta, por favor"))
    assert len(fake_google.generate_requests) == calls + 1
    assert Conversation.objects.for_tenant(tenant_a).count() == 2


@pytest.mark.django_db
def test_a_bare_5_rates_and_a_5_of_another_tenants_customer_rates_nothing(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    tenant_b: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    _notices_on(tenant_a)
    conversation = _started(client, fake_google, run_tasks, tenant_a)
    with run_tasks():
        conversation_close(conversation, owner.user)

    # The same customer writes "5" to tenant B's number: tenant B's bot answers it.
    respond(fake_google, "Hola, ¿en qué le ayudo?")
    with run_tasks():
        post(client, text_payload("5", "wamid.to-b", number=NUMBER_B))
    assert (
        Conversation.objects.for_tenant(tenant_a).get(pk=conversation.pk).satisfaction_rating
        is None
    )
    assert Message.objects.for_tenant(tenant_b).filter(role="user").count() == 1

    calls = len(fake_google.generate_requests)
    with run_tasks():
        post(client, text_payload(" 5 ", "wamid.five"))
    assert (
        Conversation.objects.for_tenant(tenant_a).get(pk=conversation.pk).satisfaction_rating == 5
    )
    assert len(fake_google.generate_requests) == calls
    stored = Message.objects.for_tenant(tenant_a).get(channel_message_id="wamid.five")
    assert stored.conversation_id == conversation.pk and stored.metadata["result"]
    # The rating is a customer message of the conversation (statistics: its message count).
    customer = Message.objects.for_tenant(tenant_a).filter(conversation=conversation, role="user")
    rated = Conversation.objects.for_tenant(tenant_a).get(pk=conversation.pk)
    assert rated.customer_messages == customer.count() >= 2


@pytest.mark.django_db
def test_staff_typing_and_a_staff_reply_show_the_typing_indicator_on_the_last_message(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    conversation = _started(client, fake_google, run_tasks, tenant_a)
    conversation = conversation_claim(conversation, owner.user)
    fake_graph.reset()
    staff = APIClient()
    staff.force_login(owner.user)
    with run_tasks():
        answer = staff.post(f"/api/v1/conversations/{conversation.pk}/typing")
        staff.post(f"/api/v1/conversations/{conversation.pk}/typing")  # within 20 s: one call
    assert answer.status_code == 200
    assert fake_graph.read_marks == [
        {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": FIRST_ID,
            "typing_indicator": {"type": "text"},
        }
    ]

    # A reply after the indicator's 20 s: read + typing, then the text. A failing indicator
    # never blocks the reply.
    cache.delete(f"typing:wa:{conversation.pk}")
    fake_graph.reset()
    fake_graph.read_mark_response = FakeGraph.error(500, status=500)
    with run_tasks():
        reply = conversation_reply(conversation, owner.user, "Le escribo yo.")
    assert [r.json().get("status") or r.json()["type"] for r in fake_graph.requests] == [
        "read",
        "text",
    ]
    assert Message.objects.for_tenant(tenant_a).get(pk=reply.pk).delivery_status == "sent"


def _status(name: str, wamid: str) -> dict[str, Any]:
    data = copy.deepcopy(payload(name))
    status = data["entry"][0]["changes"][0]["value"]["statuses"][0]
    status["id"] = wamid
    return data


@pytest.mark.django_db
def test_delivery_states_with_their_reason_in_words_and_read_never_goes_back(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    api_a: APIClient,
    api_b: APIClient,
) -> None:
    conversation = _started(client, fake_google, run_tasks, tenant_a)
    conversation = conversation_claim(conversation, owner.user)
    with run_tasks():
        first = conversation_reply(conversation, owner.user, "Primera respuesta.")
        second = conversation_reply(conversation, owner.user, "Segunda respuesta.")
    wamids = dict(
        Delivery.objects.for_tenant(tenant_a)
        .filter(message_id__in=[first.pk, second.pk])
        .values_list("message_id", "external_id")
    )
    for name in ("status_read", "status_delivered", "status_read"):  # late delivered, repeat
        assert post(client, _status(name, wamids[first.pk])).status_code == 200
    post(client, _status("status_failed_131026", wamids[second.pk]))
    post(client, _status("status_failed_131026", wamids[second.pk]))

    url = f"/api/v1/conversations/{conversation.pk}"
    rows = {m["id"]: m for m in api_a.get(url, HTTP_ACCEPT_LANGUAGE="es").json()["messages"]}
    shown = rows[str(first.pk)]
    assert (shown["delivery_status"], shown["delivery_status_label"]) == ("read", "Leído")
    assert shown["delivery_error"] is None
    failed = rows[str(second.pk)]
    assert (failed["delivery_status"], failed["delivery_status_label"]) == (
        "failed",
        "No entregado",
    )
    assert failed["delivery_error"] == (
        "WhatsApp no pudo entregarlo: el número no usa WhatsApp o su aplicación no lo admite"
    )
    english = api_a.get(url, HTTP_ACCEPT_LANGUAGE="en").json()["messages"]
    assert {m["delivery_error"] for m in english if m["id"] == str(second.pk)} == {
        "WhatsApp could not deliver it: the number does not use WhatsApp or its app does not "
        "support it"
    }
    assert api_b.get(url).status_code == 404
