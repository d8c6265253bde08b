"""`/webhooks/whatsapp` with signed batches: redeliveries, message types, routing by business
number and tenant isolation."""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import Conversation, Message
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_A,
    NUMBER_B,
    URL,
    WA_ID,
    Line,
    binding_create,
    payload,
    post,
    raw,
    respond,
    sign,
    text_payload,
    user_messages,
    with_number,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph

# --- batches and redeliveries ---------------------------------------------------------------


def _batch() -> dict[str, Any]:
    """Two entries: a text and a button reply from one customer, an image from another,
    a status for a wamid we never sent and a system error, in one POST."""
    first = text_payload("¿Abren el sábado?", "wamid.batch-1")
    button = payload("interactive_button_reply")["entry"][0]["changes"][0]["value"]["messages"][0]
    first["entry"][0]["changes"][0]["value"]["messages"].append(
        {**button, "id": "wamid.batch-2", "from": WA_ID}
    )
    second = copy.deepcopy(payload("image"))
    value = second["entry"][0]["changes"][0]["value"]
    value["contacts"][0]["wa_id"] = "34600111222"
    value["messages"][0].update({"from": "34600111222", "id": "wamid.batch-3"})
    value["statuses"] = payload("status_delivered")["entry"][0]["changes"][0]["value"]["statuses"]
    value["errors"] = [{"code": 130429, "title": "Rate limit hit"}]
    first["entry"].append(second["entry"][0])
    return first


@pytest.mark.django_db
def test_a_batch_of_several_messages_gets_one_reply_per_contact(
    line: Line,
) -> None:
    # Two messages of one contact in one delivery are a burst: one reply answers both
    # (ai_agents/conversations/burst.py); the other contact gets its own.
    for text in ("Sí, de 9 a 14; queda cancelado.", "Veo su foto."):
        respond(line.google, text)
    response = line.customer_sends(_batch())

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "stored": 3}
    stored = user_messages(line.tenant)
    assert [m.channel_message_id for m in stored] == [
        "wamid.batch-1",
        "wamid.batch-2",
        "wamid.batch-3",
    ]
    assert [m.content for m in stored][:2] == ["¿Abren el sábado?", "Cancel"]
    assert all("result" in m.metadata for m in stored)
    assert len(line.google.generate_requests) == 2
    assert "¿Abren el sábado?\\nCancel" in json.dumps(
        line.google.generate_requests[0], ensure_ascii=False
    )
    assert sorted((b["to"], b["text"]["body"]) for b in line.graph.sent) == [
        ("16505551234", "Sí, de 9 a 14; queda cancelado."),
        ("34600111222", "Veo su foto."),
    ]
    with tenant_scope(line.tenant):
        assert Conversation.objects.count() == 2


@pytest.mark.django_db
def test_the_same_payload_redelivered_gets_exactly_one_reply(
    line: Line,
) -> None:
    respond(line.google, "Abrimos de 9 a 14.")
    data = payload("text")
    with line.run_tasks():
        first = post(line.client, data)
        second = post(line.client, data)
    third = post(line.client, data)  # after the answer went out

    assert [r.status_code for r in (first, second, third)] == [200, 200, 200]
    assert [r.json()["stored"] for r in (first, second, third)] == [1, 0, 0]
    assert len(user_messages(line.tenant)) == 1
    assert len(line.google.generate_requests) == 1
    assert [b["text"]["body"] for b in line.graph.sent] == ["Abrimos de 9 a 14."]


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_posts_of_one_payload_get_one_reply_and_one_model_call(
    wa_binding: Any, tenant_a: Any, fake_google: FakeGoogle, fake_graph: FakeGraph
) -> None:
    from django.db import connection

    from erp.celery import app

    respond(fake_google, "Una sola respuesta.")
    body = raw(payload("text"))
    barrier = deadlines.barrier(10)
    statuses: list[int] = []

    def deliver() -> None:
        try:
            barrier.wait()
            response = Client().post(
                URL,
                data=body,
                content_type="application/json",
                HTTP_X_HUB_SIGNATURE_256=sign(body),
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    app.conf.task_always_eager = True  # the creating request runs the task at commit
    try:
        threads = [threading.Thread(target=deliver) for _ in range(10)]
        for t in threads:
            t.start()
        deadlines.threads_join(threads)
    finally:
        app.conf.task_always_eager = False

    assert statuses == [200] * 10
    assert len(user_messages(tenant_a)) == 1
    assert len(fake_google.generate_requests) == 1
    assert [b["text"]["body"] for b in fake_graph.sent] == ["Una sola respuesta."]
    with tenant_scope(tenant_a):
        assert Message.objects.filter(role="assistant").count() == 1


# --- types ----------------------------------------------------------------------------------

TYPES = [
    ("text", "Hi! What are your opening hours on Saturday?", {}),
    ("interactive_button_reply", "Cancel", {"interactive": {"id": "cancel-button"}}),
    (
        "interactive_list_reply",
        "Priority Mail Express",
        {"interactive": {"id": "priority_express"}},
    ),
    # Voice notes and images are fetched and read first: test_whatsapp_media.py.
    (
        "document",
        "[El cliente envió un documento «invoice-2025-03.pdf»: Invoice for March]",
        {"media": {"id": "2098734512209841", "filename": "invoice-2025-03.pdf"}},
    ),
    (
        "location",
        "[El cliente compartió una ubicación: Philz Coffee, 101 Forest Ave, Palo Alto, CA 94301 "
        "(37.44221496582, -122.16152191162)]",
        {"location": {"name": "Philz Coffee"}},
    ),
    (
        "unsupported",
        "[El cliente envió un mensaje de un tipo que no podemos leer (poll_update). "
        "Pídele que lo escriba como texto.]",
        {"unsupported": {"type": "poll_update"}},
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "text", "facts"), TYPES, ids=[t[0] for t in TYPES])
def test_each_message_type_is_stored_with_its_text_and_facts(
    name: str,
    text: str,
    facts: dict[str, Any],
    line: Line,
) -> None:
    respond(line.google, "Entendido.")
    response = line.customer_sends(payload(name))

    assert response.status_code == 200
    [message] = user_messages(line.tenant)
    assert message.content == text
    meta = message.metadata["channel_metadata"]
    assert meta["type"] == name.split("_")[0]
    assert meta["wa_id"] == WA_ID
    for key, expected in facts.items():
        assert {k: meta[key][k] for k in expected} == expected
    # Every one of these is answered (unsupported too: the customer should not be ignored).
    assert [b["text"]["body"] for b in line.graph.sent] == ["Entendido."]
    assert line.google.generate_requests[0]["contents"][-1]["parts"][0]["text"].count(text) == 1
    with tenant_scope(line.tenant):
        contact = message.conversation.contact
        assert contact is not None
        assert (contact.external_id, contact.name, contact.phone) == (
            WA_ID,
            "Sheena Nelson",
            "+16505551234",
        )


@pytest.mark.django_db
def test_a_reaction_is_stored_and_never_answered(
    line: Line,
) -> None:
    response = line.customer_sends(payload("reaction"))

    assert response.status_code == 200
    [message] = user_messages(line.tenant)
    assert message.content == "[Reacción: 👍]"
    assert message.metadata["channel_metadata"]["reaction"]["emoji"] == "👍"
    assert message.metadata["result"]["ignored"] is True
    assert line.google.generate_requests == []
    assert line.graph.requests == []


@pytest.mark.django_db
def test_an_unknown_future_type_and_odd_items_answer_200_without_crashing(
    line: Line,
) -> None:
    data = text_payload("x", "wamid.future")
    messages = data["entry"][0]["changes"][0]["value"]["messages"]
    messages[0] = {
        "from": WA_ID,
        "id": "wamid.future",
        "timestamp": "1749419000",
        "type": "hologram",
        "hologram": {"id": "h-1"},
    }
    messages.append({"type": "text"})  # no id, no sender: skipped
    messages.append("garbage")
    data["entry"].append({"id": "x", "changes": [{"field": "account_update", "value": {}}]})
    data["entry"].append({"changes": "nope"})
    respond(line.google, "¿Puede escribirlo como texto?")
    response = line.customer_sends(data)

    assert response.status_code == 200
    [message] = user_messages(line.tenant)
    assert "(hologram)" in message.content
    assert [b["text"]["body"] for b in line.graph.sent] == ["¿Puede escribirlo como texto?"]


@pytest.mark.django_db
def test_payloads_with_only_errors_or_another_object_are_acknowledged(
    client: Client, wa_binding: Any, tenant_a: Any
) -> None:
    errors_only = copy.deepcopy(payload("text"))
    value = errors_only["entry"][0]["changes"][0]["value"]
    del value["messages"], value["contacts"]
    value["errors"] = [
        {
            "code": 130429,
            "title": "Rate limit hit",
            "message": "Rate limit hit",
            "error_data": {"details": "Message failed to send because there were too many"},
        }
    ]
    ignored: tuple[Any, ...] = (errors_only, {"object": "page", "entry": []}, [], {"object": None})
    for data in ignored:
        assert post(client, data).status_code == 200
    assert user_messages(tenant_a) == []


# --- routing and tenants --------------------------------------------------------------------


@pytest.mark.django_db
def test_a_message_for_an_unknown_or_inactive_number_is_acknowledged_and_not_stored(
    client: Client, wa_binding: Any, tenant_a: Any, caplog: Any
) -> None:
    unknown = post(client, text_payload("hola", "wamid.u1", number="999"))
    wa_binding.is_active = False
    wa_binding.save(update_fields=["is_active"])
    inactive = post(client, text_payload("hola", "wamid.u2"))

    assert (unknown.status_code, inactive.status_code) == (200, 200)
    assert user_messages(tenant_a) == []
    assert "whatsapp.unknown_number" in caplog.text


@pytest.mark.django_db
def test_a_binding_of_tenant_b_never_gets_tenant_a_messages(
    line: Line,
    tenant_b: Any,
) -> None:
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    respond(line.google, "Respuesta A")
    respond(line.google, "Respuesta B")
    line.customer_sends(text_payload("hola A", "wamid.same-id"))
    with line.run_tasks():
        # Same wamid and customer on B's number: a different tenant, its own message.
        post(line.client, text_payload("hola B", "wamid.same-id", number=NUMBER_B))

    assert [m.content for m in user_messages(line.tenant)] == ["hola A"]
    assert [m.content for m in user_messages(tenant_b)] == ["hola B"]
    by_number = {
        r.path.split("/")[2]: (r.header("authorization"), r.json().get("text", {}).get("body"))
        for r in line.graph.requests
        if "status" not in r.json()
    }
    assert by_number == {
        NUMBER_A: ("Bearer EAAG-token-a", "Respuesta A"),
        NUMBER_B: ("Bearer EAAG-token-b", "Respuesta B"),
    }
    # A status arriving on B's number for A's wamid does not touch A's delivery.
    with tenant_scope(line.tenant):
        delivery = Message.objects.get(role="assistant").deliveries.get()
    status = with_number(payload("status_read"), NUMBER_B)
    status["entry"][0]["changes"][0]["value"]["statuses"][0]["id"] = delivery.external_id
    assert post(line.client, status).status_code == 200
    delivery.refresh_from_db()
    assert delivery.status == "sent"


@pytest.mark.django_db
def test_a_batch_over_the_api_body_limit_is_still_accepted(
    client: Client, wa_binding: Any, tenant_a: Any, settings: Any
) -> None:
    # Meta sends batches of up to 3 MB; a 413 would make it retry them for a week.
    data = text_payload("hola", "wamid.big")
    data["entry"][0]["changes"][0]["value"]["padding"] = "x" * (settings.API_MAX_BODY_BYTES + 1)

    assert post(client, data).status_code == 200
    assert [m.content for m in user_messages(tenant_a)] == ["hola"]


@pytest.mark.django_db
def test_an_agent_switched_off_stores_messages_but_never_answers(
    line: Line,
    wa_binding: Any,
) -> None:
    wa_binding.agent.is_active = False
    wa_binding.agent.save(update_fields=["is_active"])
    respond(line.google, "No debería salir.")

    with line.run_tasks():
        assert post(line.client, payload("text")).status_code == 200

    text = payload("text")["entry"][0]["changes"][0]["value"]["messages"][0]["text"]["body"]
    assert [m.content for m in user_messages(line.tenant)] == [text]
    assert line.google.generate_requests == []
    assert line.graph.requests == []  # not even the read mark with "typing…"
    with tenant_scope(line.tenant):
        assert not Message.objects.filter(role="assistant").exists()
