"""Hostile request shapes on the real routes: JSON nested a thousand levels, thousands of query
parameters or multipart fields. Each gets a 4xx in the error shape before any view works on
it, never a 500, and nothing is stored."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from ai_agents.models import Agent, ChannelBinding, Document, KnowledgeBase
from ai_agents.services.agents import agent_create
from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.tests.channels.whatsapp.support import sign
from erp.tenancy.scoping import tenant_scope
from erp.testing.fixtures import Persona, session_client_for

DEEP = b"[" * 1000 + b"]" * 1000
DEEP_OBJECT = b'{"a":' * 1000 + b"1" + b"}" * 1000


def _assert_error(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"]["code"] == code
    assert body["error"]["message"]


def _json_operations() -> list[tuple[str, str]]:
    """Every operation of the OpenAPI schema that takes a JSON body."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            content = (operation.get("requestBody") or {}).get("content") or {}
            if "application/json" in content:
                found.append((method, path))
    return sorted(found)


@pytest.fixture
def world(tenant_a: Any, owner: Persona, wa_settings: Any) -> dict[str, Any]:
    agent = agent_create(tenant=tenant_a, data={"name": "Lucía", "system_prompt": "Eres Lucía."})
    kb = knowledge_base_create(tenant=tenant_a, name="Ayuda")
    webchat = ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a,
        agent=agent,
        type=ChannelBinding.Type.WEBCHAT,
        allowed_origins=["https://shop.example"],
    )
    client = session_client_for(owner)
    client.defaults["HTTP_X_TENANT"] = tenant_a.slug
    return {"agent": agent, "kb": kb, "webchat": webchat, "staff": client}


def _counts(tenant: Any) -> tuple[int, int, int]:
    with tenant_scope(tenant):
        return Agent.objects.count(), KnowledgeBase.objects.count(), Document.objects.count()


def _fill(path: str, world: dict[str, Any]) -> str:
    ids = {
        "agent_id": world["agent"].pk,
        "kb_id": world["kb"].pk,
        "channel_id": world["webchat"].pk,
    }
    return re.sub(r"\{(\w+)\}", lambda m: str(ids.get(m.group(1), uuid.uuid4())), path)


@pytest.mark.django_db
@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["arrays", "objects"])
def test_json_nested_a_thousand_levels_is_a_400_on_every_json_endpoint(
    world: dict[str, Any], tenant_a: Any, body: bytes
) -> None:
    operations = _json_operations()
    assert len(operations) >= 10  # the schema was read
    before = _counts(tenant_a)
    key = world["webchat"].token
    targets = [(method, _fill(path, world)) for method, path in operations] + [
        ("post", f"/api/webchat/{key}/sessions"),
        ("post", f"/api/webchat/{key}/messages"),
    ]

    for method, path in targets:
        response = getattr(world["staff"], method)(path, body, content_type="application/json")
        _assert_error(response, 400, "json_too_deep")
    signed = Client().post(
        "/webhooks/whatsapp",
        body,
        content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=sign(body),
    )
    _assert_error(signed, 400, "json_too_deep")
    assert _counts(tenant_a) == before


@pytest.mark.django_db
def test_json_of_ordinary_depth_still_works(world: dict[str, Any], tenant_a: Any) -> None:
    nested: Any = "hoja"
    for _level in range(30):
        nested = {"n": [nested]}
    response = world["staff"].patch(
        f"/api/v1/agents/{world['agent'].pk}",
        {"name": "Lucía 2", "processing_config": {"llm_retry_delay_ms": 0}},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    deep_but_fine = world["staff"].post(
        f"/api/v1/knowledge-bases/{world['kb'].pk}/search",
        {"query": "hola", "extra": nested},
        content_type="application/json",
    )
    assert deep_but_fine.status_code == 200, deep_but_fine.content
    assert deep_but_fine.json()["results"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/api/v1/agents", "/api/v1/conversations", "/api/v1/knowledge-bases", "/api/v1/usage"]
)
def test_fifteen_hundred_query_parameters_are_a_400(
    world: dict[str, Any], path: str, api_a: Any
) -> None:
    query = "&".join(f"p{i}=1" for i in range(1500))

    for client in (world["staff"], api_a):
        response = client.get(f"{path}?{query}")
        _assert_error(response, 400, "too_many_fields")


@pytest.mark.django_db
def test_five_thousand_multipart_fields_are_a_400_and_store_nothing(
    world: dict[str, Any], tenant_a: Any, api_a: Any
) -> None:
    before = _counts(tenant_a)
    fields = {f"f{i}": "x" for i in range(5000)}

    response = api_a.post(
        f"/api/v1/knowledge-bases/{world['kb'].pk}/documents", fields, format="multipart"
    )

    _assert_error(response, 400, "too_many_fields")
    assert _counts(tenant_a) == before


@pytest.mark.django_db
def test_too_many_files_in_one_upload_are_a_400(
    world: dict[str, Any], tenant_a: Any, api_a: Any
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    before = _counts(tenant_a)
    files = {
        f"file{i}": SimpleUploadedFile(f"f{i}.txt", b"hola", content_type="text/plain")
        for i in range(150)
    }

    response = api_a.post(
        f"/api/v1/knowledge-bases/{world['kb'].pk}/documents", files, format="multipart"
    )

    _assert_error(response, 400, "too_many_files")
    assert _counts(tenant_a) == before


@pytest.mark.django_db
def test_a_mail_full_of_brackets_is_not_mistaken_for_deep_json(
    client: Client, tenant_a: Any, run_tasks: Any, fake_google: Any
) -> None:
    agent = agent_create(tenant=tenant_a, data={"name": "Lucía", "system_prompt": "Eres Lucía."})
    binding = ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, agent=agent, type=ChannelBinding.Type.EMAIL, address="ayuda@tienda.es"
    )
    mail = (
        "From: ana@cliente.es\r\nTo: ayuda@tienda.es\r\nSubject: Error\r\n"
        "Message-ID: <brackets-1@cliente.es>\r\n\r\n"
        "El programa dice: " + "{[" * 200 + "\r\n"
    ).encode()

    with run_tasks():
        response = client.post(f"/webhooks/email/{binding.token}", mail, "message/rfc822")

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "accepted"


@pytest.mark.django_db
def test_deep_json_sent_as_text_plain_to_the_web_chat_is_a_400(world: dict[str, Any]) -> None:
    response = Client(HTTP_ORIGIN="https://shop.example").post(
        f"/api/webchat/{world['webchat'].token}/sessions", DEEP, content_type="text/plain"
    )

    _assert_error(response, 400, "json_too_deep")


@pytest.mark.django_db
def test_a_nul_in_the_url_is_a_400_not_a_500(world: dict[str, Any], tenant_a: Any) -> None:
    before = _counts(tenant_a)
    browser = Client(HTTP_ORIGIN="https://shop.example")

    session = browser.post("/api/webchat/%00/sessions", "{}", content_type="application/json")
    mail = Client().post("/webhooks/email/%00", b"From: a@b.es\r\n\r\nhola", "message/rfc822")
    listed = world["staff"].get("/api/v1/conversations?status=%00")
    demo = world["staff"].get("/webchat/demo?key=%00")

    _assert_error(session, 400, "bad_request")
    _assert_error(mail, 400, "bad_request")
    _assert_error(listed, 400, "bad_request")
    assert demo.status_code == 400
    assert _counts(tenant_a) == before
