"""Web chat appearance per binding: the rules of each value, the text colour chosen for
contrast, what the widget's `/config` and `/sessions` hand out, and the settings through the
channels API and the admin, kept per tenant."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from rest_framework.test import APIClient

from ai_agents.channels.webchat.appearance import (
    appearance_clean,
    contrast_ratio,
    text_color_for,
)
from ai_agents.models import ChannelBinding
from ai_agents.tests.channels.admin_support import channel_admin_form
from ai_agents.tests.channels.webchat.support import ORIGIN, Visitor
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

URL = "/api/v1/channels"
LOOK = {
    "color": "#FFD400",
    "title": "  Tienda   Acme ",
    "greeting": "¡Hola!\n¿Le ayudo con su pedido?",
    "launcher_text": "¿Hablamos?",
    "position": "bottom-left",
    "avatar_url": "https://cdn.acme.example/logo.png",
}
INJECTION = '<img src=x onerror="alert(1)">'


def _fresh(binding: ChannelBinding) -> ChannelBinding:
    return ChannelBinding.objects.unscoped().get(pk=binding.pk)


# --- the rules ----------------------------------------------------------------------------


def test_clean_normalises_and_drops_empty_values() -> None:
    assert appearance_clean({**LOOK, "color": "#fd0", "title": ""}) == {
        "color": "#ffdd00",
        "greeting": "¡Hola!\n¿Le ayudo con su pedido?",
        "launcher_text": "¿Hablamos?",
        "position": "bottom-left",
        "avatar_url": "https://cdn.acme.example/logo.png",
    }
    assert appearance_clean({"title": "  Tienda \t Acme\u0007 "}) == {"title": "Tienda Acme"}
    assert appearance_clean({}) == {} and appearance_clean(None) == {}


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ({"color": "blue"}, "color"),
        ({"color": "#12345"}, "color"),
        ({"color": "#1f5fbf;background:url(x)"}, "color"),
        ({"position": "top-left"}, "position"),
        ({"avatar_url": "http://cdn.acme.example/a.png"}, "avatar_url"),
        ({"avatar_url": "javascript:alert(1)"}, "avatar_url"),
        ({"avatar_url": "https://user:pw@cdn.acme.example/a.png"}, "avatar_url"),
        ({"avatar_url": 'https://cdn.acme.example/a.png"onerror="x'}, "avatar_url"),
        ({"title": "x" * 61}, "title"),
        ({"greeting": "x" * 301}, "greeting"),
        ({"launcher_text": 5}, "launcher_text"),
        ({"font": "Comic Sans"}, "invalid"),
        (["#fff"], "invalid"),
    ],
)
def test_clean_refuses_what_the_widget_cannot_show(value: Any, code: str) -> None:
    with pytest.raises(ValidationError) as caught:
        appearance_clean(value)
    (error,) = caught.value.error_dict["appearance"]
    assert error.code == code


def test_text_colour_reads_on_every_colour() -> None:
    assert text_color_for("#1f5fbf") == "#ffffff"
    assert text_color_for("#ffd400") == "#000000"
    worst = min(
        contrast_ratio(color, text_color_for(color))
        for color in (
            f"#{r:x}{r:x}{g:x}{g:x}{b:x}{b:x}"
            for r in range(16)
            for g in range(16)
            for b in range(16)
        )
    )
    assert worst >= 4.5  # WCAG AA for normal text, whatever colour the owner picks


# --- what the widget gets -----------------------------------------------------------------


@pytest.mark.django_db
def test_config_gives_the_look_and_texts_without_a_session(binding: ChannelBinding) -> None:
    binding.appearance = appearance_clean(LOOK)
    binding.save()
    client = Client(HTTP_ORIGIN=ORIGIN)

    response = client.get(f"/api/webchat/{binding.token}/config", {"lang": "en"})

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert response["Cache-Control"] == "public, max-age=60"
    data = response.json()
    assert "token" not in data
    assert data["appearance"] == {
        "color": "#ffd400",
        "text_color": "#000000",
        "position": "bottom-left",
        "avatar_url": "https://cdn.acme.example/logo.png",
    }
    texts = data["texts"]
    assert (texts["title"], texts["open"]) == ("Tienda Acme", "¿Hablamos?")
    assert texts["greeting"] == "¡Hola!\n¿Le ayudo con su pedido?"
    assert texts["send"] == "Send"  # the widget's own texts follow the visitor's language
    # The session hands out the same (a widget opened before /config answered).
    session = Visitor(binding).start(lang="es").json()
    assert session["appearance"] == data["appearance"]
    assert (session["texts"]["title"], session["texts"]["send"]) == ("Tienda Acme", "Enviar")


@pytest.mark.django_db
def test_config_defaults_and_refusals(binding: ChannelBinding) -> None:
    client = Client(HTTP_ORIGIN=ORIGIN)
    data = client.get(f"/api/webchat/{binding.token}/config").json()
    assert data["appearance"] == {
        "color": "#1f5fbf",
        "text_color": "#ffffff",
        "position": "bottom-right",
        "avatar_url": "",
    }
    assert data["texts"]["title"] == "Lucía"
    assert data["texts"]["open"] == "Abrir el chat"
    assert data["texts"]["greeting"] == "¡Hola! Soy Lucía. ¿En qué puedo ayudarle?"

    other = Client(HTTP_ORIGIN="https://evil.example").get(f"/api/webchat/{binding.token}/config")
    assert other.status_code == 403
    assert other.json()["error"]["code"] == "origin_not_allowed"
    assert client.get("/api/webchat/nope/config").status_code == 404
    assert client.post(f"/api/webchat/{binding.token}/config").status_code == 405


@pytest.mark.django_db
def test_config_is_limited_per_address(
    binding: ChannelBinding, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agents.channels.webchat import visitor as webchat

    monkeypatch.setattr(webchat, "IP_CONFIGS", (2, 60))
    client = Client(HTTP_ORIGIN=ORIGIN)
    url = f"/api/webchat/{binding.token}/config"
    assert [client.get(url).status_code for _ in range(2)] == [200, 200]
    limited = client.get(url)
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
    assert limited.json()["error"]["code"] == "rate_limited"


# --- the settings: channels API -----------------------------------------------------------


@pytest.mark.django_db
def test_api_sets_reads_and_refuses_appearance(api_a: Any, binding: ChannelBinding) -> None:
    detail = f"{URL}/{binding.pk}"
    response = api_a.patch(detail, {"appearance": LOOK}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["appearance"]["color"] == "#ffd400"
    assert api_a.get(detail).json()["appearance"]["title"] == "Tienda Acme"

    bad = api_a.patch(detail, {"appearance": {"color": "red"}}, format="json")
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert (error["code"], error["field"]) == ("validation_error", "appearance")
    assert "hexadecimal" in error["message"]
    assert _fresh(binding).appearance["color"] == "#ffd400"  # unchanged

    email = api_a.post(
        URL,
        {"type": "email", "agent": str(binding.agent_id), "address": "a@acme.es", "appearance": {}},
        format="json",
    )
    assert email.status_code == 400 and email.json()["error"]["field"] == "appearance"


@pytest.mark.django_db
def test_another_tenant_cannot_read_or_change_the_appearance(
    api_a: Any, api_b: Any, binding: ChannelBinding, owner: Persona, outsider: Persona
) -> None:
    api_a.patch(f"{URL}/{binding.pk}", {"appearance": LOOK}, format="json")
    before = _fresh(binding).appearance
    detail = f"{URL}/{binding.pk}"

    assert api_b.get(detail).status_code == 404
    hijack = {"appearance": {"title": "Hackeado", "color": "#000000"}}
    assert api_b.patch(detail, hijack, format="json").status_code == 404
    assert binding.pk not in [row["id"] for row in api_b.get(URL).json()["results"]]
    assert _fresh(binding).appearance == before

    # A person in both tenants sees the binding only under its own tenant.
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.OWNER)
    both = APIClient()
    both.force_login(outsider.user)
    both.defaults["HTTP_X_TENANT"] = outsider.tenant.slug
    assert both.get(detail).status_code == 404
    assert both.patch(detail, hijack, format="json").status_code == 404
    assert _fresh(binding).appearance == before
    both.defaults["HTTP_X_TENANT"] = owner.tenant.slug
    assert both.get(detail).json()["appearance"]["title"] == "Tienda Acme"


# --- the settings: admin ------------------------------------------------------------------


def _admin_form(binding: ChannelBinding, **look: str) -> dict[str, str]:
    looks = {f"look_{key}": value for key, value in look.items()}
    origins = "\n".join(binding.allowed_origins)
    return channel_admin_form(binding.agent_id, allowed_origins=origins, **looks)


@pytest.mark.django_db
def test_admin_edits_the_look_and_previews_it_escaped(
    client: Any, owner: Persona, binding: ChannelBinding
) -> None:
    client.force_login(owner.user)
    url = f"/admin/ai_agents/channelbinding/{binding.pk}/change/"
    saved = client.post(url, _admin_form(binding, **{**LOOK, "title": INJECTION}))
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    assert _fresh(binding).appearance == {
        **appearance_clean(LOOK),
        "title": INJECTION,
    }

    page = client.get(url).content.decode()
    assert 'value="#ffd400"' in page and 'value="bottom-left"' in page
    assert "data-look-preview" in page and "background:#ffd400;color:#000000" in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert INJECTION not in page

    bad = client.post(url, _admin_form(binding, color="#ffd400", avatar_url="http://x.es/a.png"))
    assert bad.status_code == 200
    assert "El avatar debe ser una URL https://" in bad.content.decode()
    assert _fresh(binding).appearance["avatar_url"] == LOOK["avatar_url"]


@pytest.mark.django_db
def test_admin_labels_in_english(client: Any, owner: Persona, binding: ChannelBinding) -> None:
    client.force_login(owner.user)
    page = client.get(
        f"/admin/ai_agents/channelbinding/{binding.pk}/change/", HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()
    assert "Web chat appearance" in page
    assert "launcher text" in page.lower()
    assert "Apariencia del chat web" not in page


@pytest.mark.django_db
def test_the_agent_role_reads_the_look_without_changing_it(
    client: Any, member: Persona, binding: ChannelBinding
) -> None:
    binding.appearance = appearance_clean(LOOK)
    binding.save()
    client.force_login(member.user)
    url = f"/admin/ai_agents/channelbinding/{binding.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and "data-look-preview" in page.content.decode()
    assert client.post(url, _admin_form(binding, title="Otro")).status_code == 403
    assert _fresh(binding).appearance == appearance_clean(LOOK)


@pytest.mark.django_db
def test_admin_of_another_tenant_cannot_see_or_change_the_look(
    client: Any, owner: Persona, outsider: Persona, binding: ChannelBinding
) -> None:
    binding.appearance = appearance_clean(LOOK)
    binding.save()
    client.force_login(outsider.user)
    url = f"/admin/ai_agents/channelbinding/{binding.pk}/change/"
    assert client.get(url).status_code == 404
    assert client.post(url, _admin_form(binding, title="Hackeado")).status_code == 404
    assert _fresh(binding).appearance == appearance_clean(LOOK)
