"""A template send with text PostgreSQL cannot store (NUL, a lone surrogate) in its client key
or a variable, or a variable Meta refuses (132018: newline, tab, more than four spaces in a
row): refused in words (400), never a 500, and nothing stored or sent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from ai_agents.tests.channels.whatsapp.templates_support import (
    ORDER_UPDATE,
    account_ready,
    held_conversation,
    staff_messages,
    template_id,
)
from erp.testing.fake_graph import FakeGraph

pytestmark = pytest.mark.usefixtures("channel_prices")


@pytest.mark.django_db
def test_unstorable_text_in_a_template_send_is_a_400_not_a_500(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    conversation, api = held_conversation(client, tenant_a, owner, hours=30)
    api.raise_request_exception = False
    url = f"/api/v1/conversations/{conversation.pk}/template"
    good = {
        "template_id": template_id(api, conversation, "order_update"),
        "variables": ["Ana", "#1"],
        "client_key": "k",
    }
    # JSON's own escapes, as a client sends them: "\u0000" and a lone "\ud800".
    bodies = [
        json.dumps({**good, "client_key": "a\u0000b"}),
        json.dumps({**good, "variables": ["A\u0000na", "#1"]}),
        json.dumps(good).replace('"Ana"', '"A\\ud800na"'),
        json.dumps(good).replace('"k"', '"k\\udfff"'),
    ]

    with run_tasks():
        answers = [
            api.generic("POST", url, body, content_type="application/json") for body in bodies
        ]

    assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == [
        (400, "validation_error")
    ] * 4
    assert staff_messages(tenant_a) == []
    assert fake_graph.sent == []


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["Ana\nMaría", "Ana\tMaría", "Ana     María"])
def test_a_variable_meta_would_refuse_is_a_400_in_words(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    owner: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
    bad: str,
) -> None:
    """Meta refuses a parameter with a newline, a tab or more than four spaces in a row
    (132018): refused before anything is stored or sent; four spaces still go."""
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    conversation, api = held_conversation(client, tenant_a, owner, hours=30)
    url = f"/api/v1/conversations/{conversation.pk}/template"
    body = {
        "template_id": template_id(api, conversation, "order_update"),
        "variables": [bad, "#1"],
        "client_key": "k",
    }

    with run_tasks():
        refused = api.post(url, body, format="json")
        assert refused.status_code == 400, refused.content
        error = refused.json()["error"]
        assert error["code"] == "validation_error" and error["field"] == "variables"
        assert "saltos de línea" in error["message"]
        assert staff_messages(tenant_a) == [] and fake_graph.sent == []
        ok = api.post(url, {**body, "variables": ["Ana    María", "#1"]}, format="json")
        assert ok.status_code == 201, ok.content

    assert fake_graph.sent[0]["template"]["components"][0]["parameters"][0]["text"] == (
        "Ana    María"
    )


def test_the_fake_graph_refuses_such_parameters_like_meta(fake_graph: FakeGraph) -> None:
    """132018, as Meta answers it (so a send that slipped through fails visibly in tests)."""
    import urllib.request

    def send(text: str) -> tuple[int, dict[str, Any]]:
        body = {
            "messaging_product": "whatsapp",
            "to": "34600000000",
            "type": "template",
            "template": {
                "name": "order_update",
                "language": {"code": "en_US"},
                "components": [{"type": "body", "parameters": [{"type": "text", "text": text}]}],
            },
        }
        request = urllib.request.Request(
            f"{fake_graph.url}/1234/messages",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    status, answer = send("Ana\nMaría")
    assert status == 400 and answer["error"]["code"] == 132018
    assert "new-line/tab" in answer["error"]["error_data"]["details"]
    assert send("Ana     María")[1]["error"]["code"] == 132018
    assert send("Ana    María")[0] == 200
