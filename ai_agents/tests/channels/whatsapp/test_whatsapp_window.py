"""The 24-hour window from the staff's side: free text refused before anything is stored or
sent once it closed (409 in the person's language), a template sent instead from the inbox
API (the reference payload's shape, the text the customer reads stored, billed by the
template's category, once per client key), Graph's 131047 told in words, and the window's end
in the conversation JSON."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from ai_agents.models import Conversation, Message
from ai_agents.tests.channels.whatsapp.support import (
    WA_ID,
    payload,
    post,
    respond,
    stale_conversation,
)
from ai_agents.tests.channels.whatsapp.templates_support import (
    NAMED,
    ORDER_UPDATE,
    SURVEY,
    account_ready,
    claimed,
    held_conversation,
    staff_api,
    staff_messages,
    template_id,
)
from erp.llm.models import UsageLog
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import FakeGraph
from erp.testing.fake_http import FakeResponse

pytestmark = pytest.mark.usefixtures("channel_prices")


@pytest.mark.django_db
def test_outside_the_window_free_text_is_refused_before_anything_is_stored(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    conversation, api = held_conversation(client, tenant_a, owner, hours=25)

    with run_tasks():
        response = api.post(
            f"/api/v1/conversations/{conversation.pk}/reply", {"text": "Hola"}, format="json"
        )
    english = api.post(
        f"/api/v1/conversations/{conversation.pk}/reply",
        {"text": "Hola"},
        format="json",
        HTTP_ACCEPT_LANGUAGE="en",
    )

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "window_closed"
    assert error["message"] == "La ventana de 24 horas está cerrada: envía una plantilla aprobada."
    assert conversation.last_inbound_at is not None
    expected_close = conversation.last_inbound_at + timedelta(hours=24)
    assert error["window_closes_at"] == expected_close.isoformat()
    assert english.json()["error"]["message"] == (
        "The 24-hour window is closed: send an approved template."
    )
    assert staff_messages(tenant_a) == []
    assert fake_graph.sent == []


@pytest.mark.django_db
def test_inside_the_window_the_reply_goes_and_the_json_tells_when_it_closes(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    conversation, api = held_conversation(client, tenant_a, owner, hours=20)

    with run_tasks():
        response = api.post(
            f"/api/v1/conversations/{conversation.pk}/reply", {"text": "Hola"}, format="json"
        )

    assert response.status_code == 200
    assert conversation.last_inbound_at is not None
    closes = conversation.last_inbound_at + timedelta(hours=24)
    assert response.json()["window_closes_at"] == closes.isoformat().replace("+00:00", "Z")
    assert [body["text"]["body"] for body in fake_graph.sent] == ["Hola"]


@pytest.mark.django_db
def test_a_template_goes_out_in_the_reference_shape_billed_by_its_category_once(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE, SURVEY])
    conversation, api = held_conversation(client, tenant_a, owner, hours=30)
    url = f"/api/v1/conversations/{conversation.pk}/template"
    body = {
        "template_id": template_id(api, conversation, "order_update"),
        "variables": ["Sheena", "#10423"],
        "client_key": "k-1",
    }
    fake_graph.push(FakeResponse.json(payload("send_template_response")))

    with run_tasks():
        first = api.post(url, body, format="json")
    with run_tasks():
        again = api.post(url, body, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert (first.json()["created"], again.json()["created"]) == (True, False)
    assert first.json()["message"]["id"] == again.json()["message"]["id"]
    assert fake_graph.sent == [payload("send_template_request")]
    [message] = staff_messages(tenant_a)
    assert message.content == "Hola Sheena, su pedido #10423 ya salió."
    assert message.delivery_status == "sent"
    [charge] = UsageLog.objects.for_tenant(tenant_a).filter(operation="channel_message")
    assert (charge.model, charge.cost_usd) == ("US/utility", Decimal("0.004000"))


@pytest.mark.django_db
def test_named_variables_are_sent_with_their_names(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    account_ready(fake_graph, wa_binding, [NAMED])
    conversation, api = held_conversation(client, tenant_a, owner, hours=26)

    with run_tasks():
        response = api.post(
            f"/api/v1/conversations/{conversation.pk}/template",
            {
                "template_id": template_id(api, conversation, "cita"),
                "variables": ["Ana", "lunes"],
                "client_key": "k-2",
            },
            format="json",
        )

    assert response.status_code == 201
    assert fake_graph.sent == [
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": WA_ID,
            "type": "template",
            "template": {
                "name": "cita",
                "language": {"code": "es"},
                "components": [
                    {
                        "type": "body",
                        "parameters": [
                            {"type": "text", "text": "Ana", "parameter_name": "first_name"},
                            {"type": "text", "text": "lunes", "parameter_name": "fecha"},
                        ],
                    }
                ],
            },
        }
    ]


@pytest.mark.django_db
def test_bad_template_sends_are_refused_in_words_and_nothing_leaves(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    member: Any,
    outsider: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    paused = {**SURVEY, "status": "PAUSED"}
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE, paused])
    conversation = stale_conversation(client, tenant_a, hours=30)
    api = staff_api(owner)
    url = f"/api/v1/conversations/{conversation.pk}/template"
    order_id = template_id(api, conversation, "order_update")
    with tenant_scope(tenant_a):
        paused_id = wa_binding.templates.get(name="encuesta").pk
    good = {"template_id": order_id, "variables": ["Ana", "#1"], "client_key": "k"}

    not_holder = api.post(url, good, format="json")
    claimed(api, conversation)
    with run_tasks():
        answers = [
            api.post(url, {**good, "variables": ["Ana"]}, format="json"),
            api.post(url, {**good, "variables": ["Ana", ""]}, format="json"),
            api.post(url, {**good, "template_id": paused_id}, format="json"),
            api.post(url, {**good, "template_id": "x"}, format="json"),
            api.post(url, {**good, "template_id": 10**30}, format="json"),
            api.post(url, {**good, "client_key": ""}, format="json"),
            api.post(url, ["not", "an", "object"], format="json"),
        ]
    foreign = staff_api(outsider)
    foreign.credentials(HTTP_X_TENANT="globex")

    assert not_holder.status_code == 403
    assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == [
        (400, "validation_error"),
        (400, "validation_error"),
        (400, "template_not_sendable"),
        (400, "template_not_sendable"),
        (400, "template_not_sendable"),
        (400, "validation_error"),
        (400, "validation_error"),
    ]
    assert answers[0].json()["error"]["message"] == "La plantilla necesita 2 valores."
    assert foreign.post(url, good, format="json").status_code == 404
    assert foreign.get(f"/api/v1/conversations/{conversation.pk}/templates").status_code == 404
    assert staff_messages(tenant_a) == []
    assert fake_graph.sent == []


@pytest.mark.django_db
def test_graph_refusing_with_131047_is_recorded_in_words(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    conversation, api = held_conversation(client, tenant_a, owner, hours=23)  # open by our clock
    fake_graph.push(FakeResponse.json(payload("error_131047_response"), status=400))

    with run_tasks():
        response = api.post(
            f"/api/v1/conversations/{conversation.pk}/reply", {"text": "Hola"}, format="json"
        )

    assert response.status_code == 200
    detail = api.get(f"/api/v1/conversations/{conversation.pk}").json()
    [sent] = [m for m in detail["messages"] if m["author"]]
    assert sent["delivery_status"] == "failed"
    assert sent["delivery_error"] == (
        "Han pasado más de 24 horas desde el último mensaje del cliente: WhatsApp solo admite "
        "plantillas aprobadas"
    )
    assert len(fake_graph.sent) == 1  # not retried: only a template can go now


@pytest.mark.django_db
def test_a_bot_reply_due_after_the_window_closed_is_kept_unsent_and_the_team_told(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    fake_google: Any,
    run_tasks: Any,
    caplog: Any,
) -> None:
    from ai_agents.tasks import channel_conversation_answer

    conversation = stale_conversation(client, tenant_a, hours=25)  # answered late (worker lost)
    respond(fake_google, "Su pedido sale mañana.")

    with run_tasks():
        channel_conversation_answer(str(conversation.pk))

    with tenant_scope(tenant_a):
        reply = Message.objects.get(role="assistant")
    assert reply.content == "Su pedido sale mañana."
    assert reply.delivery_status == "failed"
    assert reply.metadata["delivery_error"]["code"] == "outside_24h_window"
    assert fake_graph.sent == []  # refused before calling Graph
    assert "whatsapp.outside_window" in caplog.text


@pytest.mark.django_db
def test_a_member_of_two_companies_sends_each_its_own_templates_only(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    tenant_b: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    from ai_agents.services.whatsapp_templates import whatsapp_templates_sync
    from ai_agents.tests.channels.whatsapp.support import NUMBER_B, binding_create, text_payload
    from ai_agents.tests.channels.whatsapp.templates_support import WABA_B
    from erp.testing.factories import MembershipFactory

    MembershipFactory.create(tenant=tenant_b, user=owner.user, role="owner")
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    binding_b = binding_create(tenant_b, NUMBER_B, token="EAAG-token-b", waba_id=WABA_B)
    fake_graph.templates_put(WABA_B, [SURVEY], token="EAAG-token-b", number=NUMBER_B)
    whatsapp_templates_sync(binding=binding_b)
    conversation_a = stale_conversation(client, tenant_a, hours=30)
    post(client, text_payload("hola", "wamid.b1", number=NUMBER_B))
    with tenant_scope(tenant_b):
        conversation_b = Conversation.objects.get()
    api = APIClient()
    api.force_login(owner.user)  # no X-Tenant below: the session acts for both companies
    for conversation, slug in ((conversation_a, "acme"), (conversation_b, "globex")):
        claim = f"/api/v1/conversations/{conversation.pk}/claim"
        assert api.post(claim, format="json", HTTP_X_TENANT=slug).status_code == 200
    a_template = template_id(api, conversation_a, "order_update")
    listed_b = api.get(f"/api/v1/conversations/{conversation_b.pk}/templates").json()

    with run_tasks():
        crossed = api.post(
            f"/api/v1/conversations/{conversation_b.pk}/template",
            {"template_id": a_template, "variables": ["Ana", "#1"], "client_key": "x"},
            format="json",
        )
        own = api.post(
            f"/api/v1/conversations/{conversation_b.pk}/template",
            {"template_id": listed_b["templates"][0]["id"], "client_key": "x"},
            format="json",
        )

    # the language in words for the picker, Meta's code kept to tell variants apart
    assert [(t["name"], t["language_label"]) for t in listed_b["templates"]] == [
        ("encuesta", "Español, es")
    ]
    assert listed_b["window_open"] is True
    assert crossed.status_code == 400
    assert crossed.json()["error"]["code"] == "template_not_sendable"
    assert own.status_code == 201
    assert [(b["template"]["name"], b["to"]) for b in fake_graph.sent] == [("encuesta", WA_ID)]
    assert staff_messages(tenant_a) == []
    assert [m.content for m in staff_messages(tenant_b)] == ["¿Pudimos resolver su duda?"]


@pytest.mark.django_db
def test_the_openapi_schema_documents_the_template_endpoints(client: Client) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    listed = schema["paths"]["/api/v1/conversations/{conversation_id}/templates"]["get"]
    send = schema["paths"]["/api/v1/conversations/{conversation_id}/template"]["post"]
    request = send["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][request.rsplit("/", 1)[1]]["properties"]
    assert sorted(fields) == ["client_key", "staff_email", "template_id", "variables"]
    assert "200" in listed["responses"]
