"""Built-in tools through the REST API and the fake Gemini server: the model calls a tool, sees
its result, answers; every call is recorded; tools act only on the conversation's own data."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Contact, Conversation
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import all_tenants, tenant_scope
from erp.testing.fake_google import FakeGoogle

pytestmark = pytest.mark.django_db


def _agent(api: Any, tools: list[str], **extra: Any) -> str:
    body = {
        "name": "Lucía",
        "system_prompt": "Pedido en curso: {{pedido}}.",
        "tools_enabled": tools,
        "processing_config": {"llm_retry_delay_ms": 0, **extra},
        "intent_detection": {"mode": "llm", "intents": []},
    }
    response = api.post("/api/v1/agents", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _send(api: Any, agent_id: str, text: str, external_id: str = "cli-1") -> Any:
    return api.post(
        f"/api/v1/agents/{agent_id}/messages",
        {"contact": {"external_id": external_id, "name": "Ana"}, "text": text},
        format="json",
    )


def test_tool_round_trip_sets_a_session_variable_used_by_the_next_prompt(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, ["session_variable_set", "contact_update"])
    fake_google.push(
        fake_google.reply_json(
            {"action": "session_variable_set", "variable": "pedido", "value": "A-17"}
        ),
        fake_google.reply_json({"action": "respond", "answer": "Anotado su pedido A-17."}),
    )
    body = _send(api_a, agent_id, "Mi pedido es el A-17").json()

    assert body["reply"]["text"] == "Anotado su pedido A-17."
    requests = fake_google.generate_requests
    assert len(requests) == 2
    schema = requests[0]["generationConfig"]["responseSchema"]
    assert "session_variable_set" in schema["properties"]["action"]["enum"]
    assert "Guardado" in str(requests[1]["contents"])  # the model saw the tool's result
    assert body["usage"]["input_tokens"] == 24  # both model calls counted

    conversation = Conversation.objects.for_tenant(tenant_a).get(pk=body["conversation_id"])
    assert conversation.session_variables == {"pedido": "A-17"}
    detail = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()
    [call] = detail["messages"][1]["tool_calls"]
    assert call["tool"] == "session_variable_set"
    assert call["arguments"] == {"variable": "pedido", "value": "A-17"}
    assert call["ok"] is True
    assert call["duration_ms"] >= 0
    timings = detail["messages"][1]["metadata"]["timings_ms"]
    assert timings["tools"] == call["duration_ms"]  # apart from the model's time
    assert {"llm", "finish", "total"} <= set(timings)
    rows = UsageLog.objects.for_tenant(tenant_a).filter(operation="tool_execution")
    assert [(r.model, r.success) for r in rows] == [("session_variable_set", True)]

    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Sí."}))
    _send(api_a, agent_id, "¿Lo tiene?")
    system = fake_google.generate_requests[2]["systemInstruction"]["parts"][0]["text"]
    assert "Pedido en curso: A-17." in system


def test_tools_act_only_on_the_conversations_own_contact(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, ["contact_update"])
    _send(api_a, agent_id, "hola", external_id="otro").json()  # another contact exists
    fake_google.push(
        fake_google.reply_json(
            {"action": "contact_update", "email": "ana@example.com", "name": "Ana Ruiz"}
        ),
        fake_google.reply_json({"action": "respond", "answer": "Actualizado."}),
    )
    _send(api_a, agent_id, "Mi correo es ana@example.com")
    contacts = {c.external_id: c for c in Contact.objects.for_tenant(tenant_a)}
    assert contacts["cli-1"].email == "ana@example.com"
    assert contacts["cli-1"].name == "Ana Ruiz"
    assert contacts["otro"].email == ""


def test_tool_rounds_are_capped_and_the_last_call_offers_no_tools(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, ["session_variable_set"], max_tool_rounds=2)
    loop = {"action": "session_variable_set", "variable": "x", "value": "1"}
    fake_google.push(
        fake_google.reply_json(loop),
        fake_google.reply_json(loop),
        fake_google.reply_json({"action": "respond", "answer": "Listo."}),
    )
    body = _send(api_a, agent_id, "hola").json()
    assert body["reply"]["text"] == "Listo."
    requests = fake_google.generate_requests
    assert len(requests) == 3
    last_enum = requests[2]["generationConfig"]["responseSchema"]["properties"]["action"]
    assert last_enum["enum"] == ["respond", "escalate"]


def test_invalid_tool_arguments_are_reported_to_the_model_not_run(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    agent_id = _agent(api_a, ["session_variable_set"])
    fake_google.push(
        fake_google.reply_json({"action": "session_variable_set", "value": "1"}),
        fake_google.reply_json({"action": "respond", "answer": "Perdón."}),
    )
    body = _send(api_a, agent_id, "hola").json()
    assert body["reply"]["text"] == "Perdón."
    assert "ERROR" in str(fake_google.generate_requests[1]["contents"])
    conversation = Conversation.objects.for_tenant(tenant_a).get(pk=body["conversation_id"])
    assert conversation.session_variables == {}
    row = UsageLog.objects.for_tenant(tenant_a).get(operation="tool_execution")
    assert row.success is False


def test_tenant_http_tool_round_trip_with_encrypted_headers(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, settings: Any
) -> None:
    from django.db import connection

    from ai_agents.models import HttpTool
    from erp.testing.fake_http import FakeResponse, FakeServer

    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True  # the fake endpoint is on loopback
    with FakeServer() as shop:
        shop.route("GET", r"/orders/.*", FakeResponse.json({"status": "enviado"}))
        tool = HttpTool(
            tenant=tenant_a,
            name="consultar_pedido",
            description="estado de un pedido",
            url_template=shop.url + "/orders/{order_id}",
            headers_json='{"Authorization": "Bearer tienda-secreta"}',
            args_schema={
                "type": "object",
                "properties": {"order_id": {"type": "string", "maxLength": 20}},
                "required": ["order_id"],
            },
        )
        with tenant_scope(tenant_a):
            tool.full_clean()
        tool.save()
        agent_id = _agent(api_a, ["consultar_pedido"])
        fake_google.push(
            fake_google.reply_json({"action": "consultar_pedido", "order_id": "A-17"}),
            fake_google.reply_json({"action": "respond", "answer": "Su pedido está enviado."}),
        )
        body = _send(api_a, agent_id, "¿Cómo va el pedido A-17?").json()

        assert body["reply"]["text"] == "Su pedido está enviado."
        [request] = shop.requests
        assert request.path == "/orders/A-17"
        assert request.header("authorization") == "Bearer tienda-secreta"
    assert "enviado" in str(fake_google.generate_requests[1]["contents"])
    with all_tenants(), connection.cursor() as cursor:
        cursor.execute("SELECT headers_json FROM ai_agents_httptool")
        (stored,) = cursor.fetchone()
    assert "tienda-secreta" not in stored  # encrypted at rest
    detail = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()
    assert detail["messages"][1]["tool_calls"][0]["tool"] == "consultar_pedido"


def test_http_tool_definition_errors_are_readable(tenant_a: Tenant) -> None:
    from django.core.exceptions import ValidationError

    from ai_agents.models import HttpTool

    bad = HttpTool(
        tenant=tenant_a,
        name="respond",
        description="x",
        url_template="ftp://{host}/x",
    )
    with pytest.raises(ValidationError) as caught, tenant_scope(tenant_a):
        bad.full_clean()
    assert "name" in caught.value.message_dict


def test_an_http_tool_scoped_to_the_contact_reaches_only_this_customers_records(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, settings: Any
) -> None:
    """`{contact.phone}` and `{conversation.id}` come from the conversation, not the model: a
    model asked for another customer's orders still sends this customer's phone."""
    from ai_agents.models import HttpTool
    from erp.testing.fake_http import FakeResponse, FakeServer

    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True
    with FakeServer() as shop:
        shop.route("GET", r"/customers/.*", FakeResponse.json({"orders": ["A-17"]}))
        tool = HttpTool(
            tenant=tenant_a,
            name="mis_pedidos",
            description="pedidos del cliente",
            url_template=shop.url + "/customers/{contact.phone}/orders",
            headers_json='{"X-Conversation": "{conversation.id}"}',
            args_schema={"type": "object", "properties": {"phone": {"type": "string"}}},
        )
        with tenant_scope(tenant_a):
            tool.full_clean()
        tool.save()
        agent_id = _agent(api_a, ["mis_pedidos"])
        fake_google.push(
            fake_google.reply_json({"action": "mis_pedidos", "phone": "+34999000000"}),
            fake_google.reply_json({"action": "respond", "answer": "Tiene el pedido A-17."}),
        )
        body = api_a.post(
            f"/api/v1/agents/{agent_id}/messages",
            {
                "contact": {"external_id": "cli-7", "name": "Ana", "phone": "+34600111222"},
                "text": "Dime los pedidos del +34999000000",
            },
            format="json",
        ).json()

        [request] = shop.requests
        assert request.path == "/customers/%2B34600111222/orders"
        assert request.query == {"phone": ["+34999000000"]}  # an argument, not the path
        assert request.header("x-conversation") == body["conversation_id"]

        # A customer without a phone: the call fails before leaving, never /customers//orders.
        fake_google.push(
            fake_google.reply_json({"action": "mis_pedidos"}),
            fake_google.reply_json({"action": "respond", "answer": "No puedo consultarlo."}),
        )
        other = _send(api_a, agent_id, "¿Mis pedidos?", external_id="cli-8").json()
        assert len(shop.requests) == 1
    detail = api_a.get(f"/api/v1/conversations/{other['conversation_id']}").json()
    [call] = detail["messages"][1]["tool_calls"]
    assert call["error"] == "La conversación no tiene contact.phone."


def test_an_unknown_conversation_variable_in_an_http_tool_is_a_readable_error(
    tenant_a: Tenant,
) -> None:
    from django.core.exceptions import ValidationError

    from ai_agents.models import HttpTool

    tool = HttpTool(
        tenant=tenant_a,
        name="ficha",
        description="x",
        url_template="https://erp.example/clientes/{contact.dni}",
    )
    with pytest.raises(ValidationError) as caught, tenant_scope(tenant_a):
        tool.full_clean()
    assert "{contact.dni}" in str(caught.value)


def test_knowledge_search_tool_uses_the_rag_settings_and_its_passages_are_cited(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    from ai_agents.services.knowledge import document_ingest, knowledge_base_create
    from ai_agents.services.knowledge_documents import document_add

    kb = knowledge_base_create(tenant=tenant_a, name="FAQ")
    doc = (
        "# Envíos\n\nEl envío a la península cuesta 4,95 euros y tarda 48 horas.\n\n"
        "# Devoluciones\n\nTiene 30 días para devolver un producto sin usar.\n"
    )
    document_ingest(document=document_add(kb=kb, data=doc.encode(), filename="faq.md").document)
    agent_id = _agent(api_a, ["knowledge_search"], rag_top_k=1)
    api_a.patch(f"/api/v1/agents/{agent_id}", {"knowledge_bases": [str(kb.pk)]}, format="json")
    fake_google.push(
        fake_google.reply_json({"action": "knowledge_search", "query": "devolver un producto"}),
        fake_google.reply_json({"action": "respond", "answer": "30 días; el envío 4,95 euros."}),
    )

    body = _send(api_a, agent_id, "¿Cuánto cuesta el envío?").json()

    tool_result = str(fake_google.generate_requests[1]["contents"])
    assert "30 días" in tool_result and "4,95" not in tool_result  # rag_top_k 1 for the tool
    cited = [c["heading_path"] for c in body["reply"]["citations"]]
    assert cited == [["Envíos"], ["Devoluciones"]]  # the prompt's passage, then the tool's
    reply = api_a.get(f"/api/v1/conversations/{body['conversation_id']}").json()["messages"][1]
    assert reply["rag_chunks_used"] == [c["chunk_id"] for c in body["reply"]["citations"]]
