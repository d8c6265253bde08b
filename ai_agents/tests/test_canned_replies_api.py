"""/api/v1/canned-replies: CRUD per tenant, unique shortcut, unknown variables refused, the
"/" lookup and rendering with the conversation's contact and the acting member; two tenants,
a member of both, API keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from ai_agents.models import CannedReply, Contact
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import Persona

URL = "/api/v1/canned-replies"
GREETING = {
    "shortcut": "hola",
    "title": "Saludo",
    "text": "Hola {{contact.name}}, soy {{ agent.name }}.",
}


@pytest.fixture
def both(tenant_a: Tenant, tenant_b: Tenant) -> Any:
    user: Any = UserFactory(username="both@x.test", first_name="Berta", last_name="Ruiz")
    MembershipFactory.create(tenant=tenant_a, user=user, role=Membership.Role.AGENT)
    MembershipFactory.create(tenant=tenant_b, user=user, role=Membership.Role.AGENT)
    client = APIClient()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_crud_and_lookup(member_client: Any, owner: Persona, outsider_client: Any) -> None:
    created = member_client.post(URL, GREETING, format="json")
    assert created.status_code == 201, created.content
    reply = created.json()
    assert reply["shortcut"] == "hola" and reply["tenant"]["id"] == owner.tenant.pk
    member_client.post(
        URL, {"shortcut": "envio", "title": "Plazos de envío", "text": "24-72 h"}, format="json"
    )
    assert [r["shortcut"] for r in member_client.get(URL, {"q": "/ho"}).json()["results"]] == [
        "hola"
    ]
    assert [r["shortcut"] for r in member_client.get(URL, {"q": "plazos"}).json()["results"]] == [
        "envio"
    ]
    changed = member_client.patch(f"{URL}/{reply['id']}", {"title": "Bienvenida"}, format="json")
    assert changed.status_code == 200 and changed.json()["title"] == "Bienvenida"
    assert changed.json()["text"] == GREETING["text"]
    assert outsider_client.get(f"{URL}/{reply['id']}").status_code == 404
    assert outsider_client.delete(f"{URL}/{reply['id']}").status_code == 404
    assert outsider_client.get(URL).json()["results"] == []
    assert member_client.delete(f"{URL}/{reply['id']}").status_code == 204
    assert member_client.get(f"{URL}/{reply['id']}").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({**GREETING, "text": "Hola {{cliente.nombre}}"}, "text", "Variables desconocidas"),
        ({**GREETING, "shortcut": "con espacio"}, "shortcut", "atajo"),
        ({**GREETING, "shortcut": ""}, "shortcut", "atajo"),
        ({**GREETING, "title": ""}, "title", "título"),
        ({**GREETING, "text": "x" * 4001}, "text", "4000"),
        ({**GREETING, "text": 7}, "text", "texto"),
    ],
)
def test_bad_input_is_400_in_words(
    member_client: Any, owner: Persona, body: dict[str, Any], field: str, words: str
) -> None:
    response = member_client.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.content.decode() and words in response.content.decode()


@pytest.mark.django_db
def test_shortcut_unique_per_tenant_only(
    member_client: Any, outsider_client: Any, owner: Persona
) -> None:
    assert member_client.post(URL, GREETING, format="json").status_code == 201
    again = member_client.post(URL, GREETING, format="json")
    assert again.status_code == 400 and "/hola" in again.content.decode()
    assert outsider_client.post(URL, GREETING, format="json").status_code == 201
    other = CannedReply.objects.for_tenant(owner.tenant).get()
    renamed = member_client.post(URL, {**GREETING, "shortcut": "adios"}, format="json").json()
    clash = member_client.patch(f"{URL}/{renamed['id']}", {"shortcut": "hola"}, format="json")
    assert clash.status_code == 400
    assert CannedReply.objects.for_tenant(owner.tenant).get(pk=other.pk).shortcut == "hola"


@pytest.mark.django_db
def test_render_fills_contact_and_agent(
    both: Any, owner: Persona, outsider: Persona, api_a: Any, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    Contact.objects.for_tenant(owner.tenant).filter(pk=conversation.contact_id).update(
        name="Ana <b>", phone="+34 600 000 000"
    )
    other = conversation_make(agent_for(outsider.tenant), thread="b")
    reply = both.post(URL, {**GREETING, "tenant": owner.tenant.pk}, format="json").json()
    url = f"{URL}/{reply['id']}/render"
    rendered = both.post(url, {"conversation_id": str(conversation.pk)}, format="json")
    assert rendered.status_code == 200, rendered.content
    assert rendered.json() == {"text": "Hola Ana <b>, soy Berta Ruiz."}  # plain text, as is
    mixed = both.post(url, {"conversation_id": str(other.pk)}, format="json")
    assert mixed.status_code == 400 and "otra empresa" in mixed.content.decode()
    assert both.post(url, {}, format="json").status_code == 400
    by_key = api_a.post(
        url,
        {"conversation_id": str(conversation.pk), "staff_email": member.user.email},
        format="json",
    )
    assert by_key.json()["text"] == f"Hola Ana <b>, soy {member.user.email}."
    assert api_a.post(url, {"conversation_id": str(other.pk)}, format="json").status_code == 404


@pytest.mark.django_db
def test_member_of_two_tenants_lists_both_and_creates_in_either(
    both: Any, tenant_a: Tenant, tenant_b: Tenant, api_b: Any
) -> None:
    for tenant in (tenant_a, tenant_b):
        made = both.post(URL, {**GREETING, "tenant": tenant.pk}, format="json")
        assert made.status_code == 201 and made.json()["tenant"]["id"] == tenant.pk
    assert {r["tenant"]["id"] for r in both.get(URL).json()["results"]} == {
        tenant_a.pk,
        tenant_b.pk,
    }
    only_b = both.get(URL, {"tenant": tenant_b.pk}).json()["results"]
    assert [r["tenant"]["id"] for r in only_b] == [tenant_b.pk]
    refused = both.post(URL, {**GREETING, "tenant": 999999}, format="json")
    assert refused.status_code == 400
    assert [r["tenant"]["id"] for r in api_b.get(URL).json()["results"]] == [tenant_b.pk]


@pytest.mark.django_db
def test_the_admin_applies_the_same_rules(owner: Persona) -> None:
    from django.test import Client

    client = Client()
    client.force_login(owner.user)
    url = "/admin/ai_agents/cannedreply/add/"
    refused = client.post(
        url, {"tenant": owner.tenant.pk, "shortcut": "x", "title": "T", "text": "{{foo}}"}
    )
    assert refused.status_code == 200
    assert "Variables desconocidas" in refused.content.decode()
    saved = client.post(
        url, {"tenant": owner.tenant.pk, "shortcut": "/Gracias", "title": "T", "text": "Gracias"}
    )
    assert saved.status_code == 302
    assert CannedReply.objects.for_tenant(owner.tenant).get().shortcut == "gracias"


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["title", "text"])
@pytest.mark.parametrize("bad", ["Hola\x00", "Hola \ud800"])
def test_unstorable_canned_reply_is_a_400_in_words(
    member_client: Any, owner: Persona, field: str, bad: str
) -> None:
    created = member_client.post(URL, GREETING, format="json")
    assert created.status_code == 201
    body = json.dumps({**GREETING, "shortcut": "otra", field: bad})
    refused = member_client.post(URL, body, content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["field"] == field
    assert "caracteres" in refused.json()["error"]["message"]
    url = f"{URL}/{created.json()['id']}"
    changed = member_client.patch(url, json.dumps({field: bad}), content_type="application/json")
    assert changed.status_code == 400, changed.content
    assert [(r.title, r.text) for r in CannedReply.objects.for_tenant(owner.tenant.pk)] == [
        (GREETING["title"], GREETING["text"])
    ]
