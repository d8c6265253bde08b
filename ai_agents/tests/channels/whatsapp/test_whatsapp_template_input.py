"""A template send with text PostgreSQL cannot store (NUL, a lone surrogate) in its client key
or a variable: refused in words (400), never a 500, and nothing stored or sent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from ai_agents.tests.channels.whatsapp.templates_support import (
    ORDER_UPDATE,
    account_ready,
    claimed,
    conversation_aged,
)
from ai_agents.tests.channels.whatsapp.test_whatsapp_window import (
    _api,
    _staff_messages,
    _template_id,
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
    conversation = conversation_aged(client, tenant_a, hours=30)
    api = _api(owner)
    api.raise_request_exception = False
    url = f"/api/v1/conversations/{conversation.pk}/template"
    claimed(api, conversation)
    good = {
        "template_id": _template_id(api, conversation, "order_update"),
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
    assert _staff_messages(tenant_a) == []
    assert fake_graph.sent == []
