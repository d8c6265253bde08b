"""/api/v1/channels: channel bindings of the tenant's agents, secrets write-only, readable 400s,
and the ChannelBinding admin."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from ai_agents.tests.channels.admin_support import channel_admin_form
from erp.tenancy.scoping import tenant_scope

URL = "/api/v1/channels"


@pytest.fixture
def agent_a(tenant_a: Any) -> Any:
    return agent_create(tenant=tenant_a, data={"name": "Lucía", "system_prompt": "Eres Lucía."})


@pytest.fixture
def agent_b(tenant_b: Any) -> Any:
    return agent_create(tenant=tenant_b, data={"name": "Otro", "system_prompt": "Eres otro."})


def _whatsapp(agent: Any, number: str = "1234567890") -> dict[str, Any]:
    return {
        "type": "whatsapp",
        "agent": str(agent.pk),
        "phone_number_id": number,
        "access_token": "EAAG-secret-token",
    }


def _error(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.content
    return response.json()["error"]


@pytest.mark.django_db
def test_whatsapp_binding_keeps_the_token_write_only(api_a: Any, agent_a: Any) -> None:
    created = api_a.post(URL, _whatsapp(agent_a), format="json")

    assert created.status_code == 201, created.content
    data = created.json()
    assert data["type"] == "whatsapp"
    assert data["agent"] == str(agent_a.pk)
    assert data["has_access_token"] is True
    assert data["whatsapp_template"] == {}  # chosen among the synced templates later
    assert "access_token" not in data
    assert "EAAG-secret-token" not in created.content.decode()
    listing = api_a.get(URL)
    assert "EAAG-secret-token" not in listing.content.decode()
    with tenant_scope(agent_a.tenant):
        stored = ChannelBinding.objects.get(pk=data["id"])
        assert stored.access_token == "EAAG-secret-token"

    # PATCH without the token keeps it; with a new one replaces it.
    renamed = api_a.patch(f"{URL}/{data['id']}", {"name": "Tienda"}, format="json")
    assert renamed.status_code == 200
    assert renamed.json()["has_access_token"] is True
    api_a.patch(f"{URL}/{data['id']}", {"access_token": "EAAG-new"}, format="json")
    with tenant_scope(agent_a.tenant):
        assert ChannelBinding.objects.get(pk=data["id"]).access_token == "EAAG-new"


@pytest.mark.django_db
def test_email_binding_answers_with_the_absolute_webhook_url(
    api_a: Any, agent_a: Any, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["erp.example.com"]
    created = api_a.post(
        URL,
        {"type": "email", "agent": str(agent_a.pk), "address": "Ayuda@Tienda.ES"},
        format="json",
        HTTP_HOST="erp.example.com",
    )

    assert created.status_code == 201, created.content
    data = created.json()
    assert data["address"] == "Ayuda@tienda.es"
    with tenant_scope(agent_a.tenant):
        token = ChannelBinding.objects.get(pk=data["id"]).token
    assert data["webhook_url"] == f"http://erp.example.com/webhooks/email/{token}"
    assert "phone_number_id" not in data and "public_key" not in data


@pytest.mark.django_db
def test_webchat_binding_answers_with_public_key_and_snippet(api_a: Any, agent_a: Any) -> None:
    created = api_a.post(
        URL,
        {
            "type": "webchat",
            "agent": str(agent_a.pk),
            "allowed_origins": ["https://Tienda.es", "http://localhost:3000", "https://tienda.es"],
        },
        format="json",
    )

    assert created.status_code == 201, created.content
    data = created.json()
    assert data["allowed_origins"] == ["https://tienda.es", "http://localhost:3000"]
    assert len(data["public_key"]) >= 24
    assert data["embed_snippet"] == (
        f'<script src="http://testserver/widget.js" data-key="{data["public_key"]}"></script>'
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"agent": "AGENT", "address": "a@b.es"}, "type"),
        ({"type": "sms", "agent": "AGENT"}, "type"),
        ({"type": "email", "address": "a@b.es"}, "agent"),
        ({"type": "email", "agent": "not-a-uuid", "address": "a@b.es"}, "agent"),
        ({"type": "email", "agent": "AGENT"}, "address"),
        ({"type": "email", "agent": "AGENT", "address": "no es un correo"}, "address"),
        (
            {"type": "email", "agent": "AGENT", "address": "a@b.es", "phone_number_id": "1"},
            "phone_number_id",
        ),
        ({"type": "whatsapp", "agent": "AGENT", "phone_number_id": "123456"}, "access_token"),
        (
            {"type": "whatsapp", "agent": "AGENT", "phone_number_id": "abc", "access_token": "t"},
            "phone_number_id",
        ),
        ({"type": "webchat", "agent": "AGENT", "allowed_origins": []}, "allowed_origins"),
        (
            {"type": "webchat", "agent": "AGENT", "allowed_origins": "https://a.es"},
            "allowed_origins",
        ),
        (
            {"type": "webchat", "agent": "AGENT", "allowed_origins": ["https://a.es/path"]},
            "allowed_origins",
        ),
        (
            {"type": "webchat", "agent": "AGENT", "allowed_origins": ["http://tienda.es"]},
            "allowed_origins",
        ),
        (
            {"type": "webchat", "agent": "AGENT", "allowed_origins": ["https://shop.*.es"]},
            "allowed_origins",
        ),
        (
            {
                **{"type": "whatsapp", "agent": "AGENT", "phone_number_id": "123456"},
                **{"access_token": "t", "whatsapp_template": {"name": "x"}},
            },
            "whatsapp_template",
        ),
    ],
)
def test_invalid_bindings_get_readable_400s(
    api_a: Any, agent_a: Any, body: dict[str, Any], field: str
) -> None:
    if body.get("agent") == "AGENT":
        body = {**body, "agent": str(agent_a.pk)}
    error = _error(api_a.post(URL, body, format="json"))

    assert error["code"] == "validation_error"
    assert error["field"] == field
    assert error["message"].startswith(f"{field}: ")
    assert ChannelBinding.objects.unscoped().count() == 0  # nothing created


@pytest.mark.django_db
def test_type_is_immutable(api_a: Any, agent_a: Any) -> None:
    created = api_a.post(URL, _whatsapp(agent_a), format="json").json()
    error = _error(api_a.patch(f"{URL}/{created['id']}", {"type": "email"}, format="json"))
    assert error["field"] == "type"
    same = api_a.patch(f"{URL}/{created['id']}", {"type": "whatsapp"}, format="json")
    assert same.status_code == 200


@pytest.mark.django_db
def test_a_phone_number_is_bound_once_across_tenants(
    api_a: Any, api_b: Any, agent_a: Any, agent_b: Any
) -> None:
    assert api_a.post(URL, _whatsapp(agent_a), format="json").status_code == 201

    mine_again = _error(api_a.post(URL, _whatsapp(agent_a), format="json"))
    theirs = _error(api_b.post(URL, _whatsapp(agent_b), format="json"))
    assert mine_again["code"] == theirs["code"] == "phone_number_taken"


@pytest.mark.django_db
def test_tenants_never_see_or_bind_each_others_channels(
    api_a: Any, api_b: Any, agent_a: Any, agent_b: Any
) -> None:
    mine = api_a.post(
        URL, {"type": "email", "agent": str(agent_a.pk), "address": "a@tienda.es"}, format="json"
    ).json()

    assert api_b.get(f"{URL}/{mine['id']}").status_code == 404
    assert api_b.patch(f"{URL}/{mine['id']}", {"name": "x"}, format="json").status_code == 404
    assert api_b.delete(f"{URL}/{mine['id']}").status_code == 404
    assert api_b.get(URL).json() == {"results": [], "next": None}
    stolen = _error(
        api_b.post(
            URL, {"type": "email", "agent": str(agent_a.pk), "address": "b@x.es"}, format="json"
        )
    )
    assert stolen["field"] == "agent"
    moved = _error(api_a.patch(f"{URL}/{mine['id']}", {"agent": str(agent_b.pk)}, format="json"))
    assert moved["field"] == "agent"
    assert api_a.get(f"{URL}/{mine['id']}").status_code == 200
    # Nothing B tried changed A's binding or created one of B's on A's agent.
    [row] = ChannelBinding.objects.unscoped().all()
    assert (str(row.pk), row.name, row.agent_id) == (mine["id"], mine["name"], agent_a.pk)


@pytest.mark.django_db
def test_list_is_paginated_and_delete_removes(api_a: Any, agent_a: Any) -> None:
    for n in range(3):
        api_a.post(
            URL, {"type": "email", "agent": str(agent_a.pk), "address": f"{n}@t.es"}, format="json"
        )
    first = api_a.get(f"{URL}?limit=2").json()
    assert len(first["results"]) == 2 and first["next"]
    rest = api_a.get(first["next"]).json()
    assert len(rest["results"]) == 1 and rest["next"] is None

    gone = first["results"][0]["id"]
    assert api_a.delete(f"{URL}/{gone}").status_code == 204
    assert api_a.get(f"{URL}/{gone}").status_code == 404
    assert api_a.get(f"{URL}/not-a-uuid").status_code == 404


@pytest.mark.django_db
def test_members_read_but_do_not_write(member_client: Any, agent_a: Any) -> None:
    assert member_client.get(URL).status_code == 200
    body = {"type": "email", "agent": str(agent_a.pk), "address": "a@t.es"}
    refused = member_client.post(URL, body, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert ChannelBinding.objects.unscoped().count() == 0


@pytest.mark.django_db
def test_schema_documents_the_channels_endpoints(client: Any) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert "/api/v1/channels" in schema["paths"]
    assert "/api/v1/channels/{channel_id}" in schema["paths"]


# --- Admin ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_creates_bindings_with_the_api_rules(client: Any, owner: Any, agent_a: Any) -> None:
    client.force_login(owner.user)
    response = client.post(
        "/admin/ai_agents/channelbinding/add/",
        channel_admin_form(
            agent_a.pk, type="whatsapp", phone_number_id="5550001", access_token="EAAG-s"
        ),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    with tenant_scope(owner.tenant):
        binding = ChannelBinding.objects.get(phone_number_id="5550001")
        assert binding.access_token == "EAAG-s"
        assert binding.tenant_id == owner.tenant.pk

    page = client.get(f"/admin/ai_agents/channelbinding/{binding.pk}/change/").content.decode()
    assert "EAAG-s" not in page
    # Saving without a token keeps it.
    client.post(
        f"/admin/ai_agents/channelbinding/{binding.pk}/change/",
        channel_admin_form(agent_a.pk, type="whatsapp", phone_number_id="5550001", name="Tienda"),
    )
    with tenant_scope(owner.tenant):
        binding.refresh_from_db()
        assert (binding.name, binding.access_token) == ("Tienda", "EAAG-s")

    taken = client.post(
        "/admin/ai_agents/channelbinding/add/",
        channel_admin_form(
            agent_a.pk, type="whatsapp", phone_number_id="5550001", access_token="x"
        ),
    )
    assert taken.status_code == 200
    assert "ya está conectado" in taken.content.decode()


@pytest.mark.django_db
def test_admin_shows_webhook_url_and_snippet(client: Any, owner: Any, agent_a: Any) -> None:
    client.force_login(owner.user)
    client.post(
        "/admin/ai_agents/channelbinding/add/",
        channel_admin_form(agent_a.pk, type="email", address="ayuda@tienda.es"),
    )
    client.post(
        "/admin/ai_agents/channelbinding/add/",
        channel_admin_form(agent_a.pk, type="webchat", allowed_origins="https://tienda.es\n"),
    )
    with tenant_scope(owner.tenant):
        email = ChannelBinding.objects.get(type="email")
        webchat = ChannelBinding.objects.get(type="webchat")
        assert webchat.allowed_origins == ["https://tienda.es"]

    page = client.get(f"/admin/ai_agents/channelbinding/{email.pk}/change/").content.decode()
    assert f"http://testserver/webhooks/email/{email.token}" in page
    page = client.get(f"/admin/ai_agents/channelbinding/{webchat.pk}/change/").content.decode()
    assert f"data-key=&quot;{webchat.token}&quot;" in page

    bad = client.post(
        "/admin/ai_agents/channelbinding/add/",
        channel_admin_form(agent_a.pk, type="webchat", allowed_origins="tienda.es"),
    )
    assert bad.status_code == 200 and "Origen no válido" in bad.content.decode()


@pytest.mark.django_db
def test_admin_of_another_tenant_gets_404(client: Any, outsider: Any, agent_a: Any) -> None:
    with tenant_scope(agent_a.tenant):
        binding = ChannelBinding.objects.create(
            tenant=agent_a.tenant, agent=agent_a, type="email", address="a@t.es"
        )
    client.force_login(outsider.user)
    assert client.get(f"/admin/ai_agents/channelbinding/{binding.pk}/change/").status_code == 404
    assert str(binding.pk) not in client.get("/admin/ai_agents/channelbinding/").content.decode()
