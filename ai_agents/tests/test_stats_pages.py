"""The statistics page (`/stats/`) and its CSV links, and the admin's text-document form the
"add to the knowledge base" action opens: the member's tenant only, bad parameters as 400."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client

from ai_agents.models import Document
from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.tests.stats_helpers import PERIOD, stats_week
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db


def _client(persona: Persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def test_the_page_shows_the_figures_and_the_actions(owner: Persona, outsider: Persona) -> None:
    stats_week(owner.tenant, owner.user)
    stats_week(outsider.tenant, outsider.user)

    response = _client(owner).get("/stats/", PERIOD)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="card-conversations"><dt>Conversaciones</dt><dd><span class="value">7<' in html
    assert "28,6 %" in html  # 2 of 7 resolved by the AI
    assert "mediana 3,0 s · p90 7,6 s" in html
    assert "mediana 3,5 min · p90 4,7 min" in html
    assert "0,0800 USD" in html
    assert "¿Hacen envíos a Canarias?" in html
    assert "3 veces" in html
    add = response.context["unanswered"][0]["add_url"]
    assert urlparse(add).path == "/admin/ai_agents/document/add/"
    assert parse_qs(urlparse(add).query)["title"] == ["¿Hacen envíos a Canarias?"]
    assert "/stats/conversations.csv?tenant=acme&amp;from=2026-03-01&amp;to=2026-03-07" in html


def test_another_tenants_page_and_csv_are_404(owner: Persona, outsider: Persona) -> None:
    stats_week(outsider.tenant, outsider.user)
    client = _client(owner)

    page = client.get("/stats/", {**PERIOD, "tenant": outsider.tenant.slug})
    export = client.get("/stats/conversations.csv", {**PERIOD, "tenant": outsider.tenant.slug})

    assert page.status_code == 404
    assert export.status_code == 404


def test_a_member_of_two_tenants_picks_one(owner: Persona, outsider: Persona) -> None:
    stats_week(outsider.tenant, outsider.user)
    MembershipFactory.create(tenant=outsider.tenant, user=owner.user, role=Membership.Role.AGENT)
    client = _client(owner)

    mine = client.get("/stats/", {**PERIOD, "tenant": owner.tenant.slug})
    theirs = client.get("/stats/", {**PERIOD, "tenant": outsider.tenant.slug})

    assert mine.context["stats"].conversations == 0
    assert theirs.context["stats"].conversations == 7
    assert 'name="tenant" id="stats-tenant"' in theirs.content.decode()


def test_bad_parameters_show_the_error_with_status_400(owner: Persona) -> None:
    client = _client(owner)

    page = client.get("/stats/", {"from": "2026-03-08", "to": "2026-03-01"})
    export = client.get("/stats/stats.csv", {"channel": "fax"})

    assert page.status_code == 400
    assert "Debe ser anterior o igual a «to»." in page.content.decode()
    assert export.status_code == 400
    assert export.json()["error"]["code"] == "validation_error"
    assert "channel" in export.json()["error"]["fields"]


def test_the_csv_links_download(owner: Persona) -> None:
    stats_week(owner.tenant, owner.user)
    client = _client(owner)

    figures = client.get("/stats/stats.csv", PERIOD)
    rows = client.get("/stats/conversations.csv", {**PERIOD, "channel": "email"})

    assert (
        figures["Content-Disposition"] == 'attachment; filename="stats-2026-03-01-2026-03-07.csv"'
    )
    assert "resolved_by_ai,2" in figures.getvalue().decode()
    lines = rows.getvalue().decode().strip().splitlines()
    assert len(lines) == 2  # the header and c6
    assert ",email," in lines[1]


def test_add_to_the_knowledge_base_prefills_and_saves(owner: Persona, outsider: Persona) -> None:
    kb = knowledge_base_create(tenant=owner.tenant, name="Preguntas")
    theirs = knowledge_base_create(tenant=outsider.tenant, name="Ajena")
    client = _client(owner)

    form = client.get("/admin/ai_agents/document/add/", {"title": "¿Envían a Canarias?"})
    refused = client.post(
        "/admin/ai_agents/document/add/",
        {"knowledge_base": str(theirs.pk), "title": "X", "text": "Y"},
    )
    saved = client.post(
        "/admin/ai_agents/document/add/",
        {"knowledge_base": str(kb.pk), "title": "Envíos a Canarias", "text": "Sí, en 5 días."},
    )

    assert 'value="¿Envían a Canarias?"' in form.content.decode()
    assert str(theirs.pk) not in form.content.decode()
    assert refused.status_code == 200  # the form again, with the error
    assert Document.objects.for_tenant(outsider.tenant).count() == 0
    assert saved.status_code == 302
    document = Document.objects.for_tenant(owner.tenant).get()
    assert (document.title, document.source, bytes(document.data)) == (
        "Envíos a Canarias",
        "text",
        "Sí, en 5 días.".encode(),
    )


def test_an_agent_member_cannot_add_documents(member: Persona, client: Any) -> None:
    client.force_login(member.user)

    assert client.get("/admin/ai_agents/document/add/").status_code == 403
