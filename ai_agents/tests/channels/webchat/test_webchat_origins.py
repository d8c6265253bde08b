"""Allowed origins: one rule (`ai_agents.channels.webchat.origins`) for the channels API, the
admin and the widget's endpoints, including `https://*.domain` for one subdomain label."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from ai_agents.channels.webchat.origins import OriginInvalid, origin_matches, origin_pattern_clean
from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from ai_agents.tests.channels.admin_support import channel_admin_form
from erp.tenancy.scoping import tenant_scope

URL = "/api/v1/channels"
WILD = "https://*.tienda.es"


@pytest.fixture
def agent_a(tenant_a: Any) -> Any:
    return agent_create(tenant=tenant_a, data={"name": "Lucía", "system_prompt": "Eres Lucía."})


def _session(key: str, origin: str) -> Any:
    return Client(HTTP_ORIGIN=origin).post(
        f"/api/webchat/{key}/sessions", json.dumps({}), content_type="application/json"
    )


# --- the rule itself -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("https://Tienda.es", "https://tienda.es"),
        ("https://tienda.es:443", "https://tienda.es"),
        ("https://tienda.es:8443", "https://tienda.es:8443"),
        ("  https://*.Tienda.es ", "https://*.tienda.es"),
        ("https://*.shop.co.uk:8443", "https://*.shop.co.uk:8443"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("http://127.0.0.1", "http://127.0.0.1"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_valid_patterns_are_stored_one_way(written: str, stored: str) -> None:
    assert origin_pattern_clean(written) == stored


@pytest.mark.parametrize(
    "written",
    [
        "*",
        "https://*",
        "https://*.es",
        "https://shop.*.es",
        "https://*shop.tienda.es",
        "https://*.*.tienda.es",
        "*.tienda.es",
        "https://*.tienda.es/ruta",
        "https://tienda.es/",
        "https://tienda.es?x=1",
        "https://user@tienda.es",
        "http://tienda.es",
        "http://*.localhost",
        "https://tienda.es:0",
        "https://tienda.es:99999",
        "ftp://tienda.es",
        "tienda.es",
        "",
    ],
)
def test_invalid_patterns_are_refused(written: str) -> None:
    with pytest.raises(OriginInvalid):
        origin_pattern_clean(written)


@pytest.mark.parametrize(
    ("origin", "admitted"),
    [
        ("https://shop.tienda.es", True),
        ("https://SHOP.tienda.es", True),
        ("https://shop.tienda.es:443", True),
        ("https://tienda.es", False),  # the wildcard is one label, never none
        ("https://a.b.tienda.es", False),  # ... nor two
        ("http://shop.tienda.es", False),  # scheme exact
        ("https://shop.tienda.es:8443", False),  # port exact
        ("https://shop.tienda.es.evil.test", False),
        ("https://shoptienda.es", False),
        ("null", False),
    ],
)
def test_a_wildcard_admits_exactly_one_label_with_the_same_scheme_and_port(
    origin: str, admitted: bool
) -> None:
    assert origin_matches(origin, [WILD]) is admitted


# --- the same rule everywhere --------------------------------------------------------------
@pytest.mark.django_db
def test_api_accepts_a_wildcard_and_the_widget_admits_only_its_subdomains(
    api_a: Any, agent_a: Any
) -> None:
    response = api_a.post(
        URL,
        {"type": "webchat", "agent": str(agent_a.pk), "allowed_origins": ["HTTPS://*.Tienda.es"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["allowed_origins"] == [WILD]
    key = response.json()["public_key"]

    allowed = _session(key, "https://shop.tienda.es")
    assert allowed.status_code == 200
    assert allowed["Access-Control-Allow-Origin"] == "https://shop.tienda.es"
    preflight = Client().options(
        f"/api/webchat/{key}/messages", HTTP_ORIGIN="https://blog.tienda.es"
    )
    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == "https://blog.tienda.es"

    for refused in ("https://tienda.es", "https://a.b.tienda.es", "https://shop.tienda.es:8443"):
        denied = _session(key, refused)
        assert denied.status_code == 403
        assert denied.json()["error"]["code"] == "origin_not_allowed"
        assert "Access-Control-Allow-Origin" not in denied


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("*", "Origen no válido: *. Use https://dominio[:puerto] sin ruta"),
        ("https://*.tienda.es/ruta", "Origen no válido: https://*.tienda.es/ruta."),
        ("https://shop.*.es", "Origen no válido: https://shop.*.es."),
        ("https://*.es", "El comodín * solo puede ser la primera parte de un dominio"),
    ],
)
def test_api_refuses_invalid_patterns_with_a_spanish_400(
    api_a: Any, agent_a: Any, pattern: str, words: str
) -> None:
    response = api_a.post(
        URL,
        {"type": "webchat", "agent": str(agent_a.pk), "allowed_origins": [pattern]},
        format="json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("validation_error", "allowed_origins")
    assert words in error["message"]
    assert ChannelBinding.objects.unscoped().count() == 0


@pytest.mark.django_db
def test_admin_accepts_a_wildcard_and_refuses_an_invalid_pattern(
    client: Any, owner: Any, agent_a: Any
) -> None:
    client.force_login(owner.user)
    form = channel_admin_form(agent_a.pk, type="webchat")
    added = client.post(
        "/admin/ai_agents/channelbinding/add/",
        {**form, "allowed_origins": f"https://tienda.es\n{WILD}\n"},
    )
    assert added.status_code == 302, added.content.decode()[-3000:]
    with tenant_scope(owner.tenant):
        binding = ChannelBinding.objects.get(type="webchat")
        assert binding.allowed_origins == ["https://tienda.es", WILD]
    assert _session(binding.token, "https://shop.tienda.es").status_code == 200

    bad = client.post(
        "/admin/ai_agents/channelbinding/add/", {**form, "allowed_origins": "https://*.es"}
    )
    assert bad.status_code == 200
    assert "El comodín * solo puede ser la primera parte" in bad.content.decode()
    with tenant_scope(owner.tenant):
        assert ChannelBinding.objects.filter(type="webchat").count() == 1
