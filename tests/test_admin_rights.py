"""Rights in the admin, probed with legitimate accounts on real rows of two tenants.

`two_hats` is the owner of tenant B and only an `agent` (read-only) of tenant A. Against every
registered tenant-owned admin (discovered from the registry, so a new admin is probed too) every
write on A's row is refused and nothing changes: change, delete, every action, add with A as
the tenant, the admin's own views (upload...), autocomplete offers nothing of A. The outsider
(owner of B, no membership in A) gets 404 for A's real rows.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from ai_agents.models import Agent, KnowledgeBase
from erp.tenancy.models import Membership, Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing.factories import MembershipFactory
from tests.admin_probe import (
    autocomplete_sources,
    custom_object_urls,
    form_data,
    snapshot,
    tenant_admins,
    url,
)
from tests.admin_rows import BUILDERS, rows_for

pytestmark = pytest.mark.django_db

ADMINS = tenant_admins()
IDS = [model._meta.label for model, _ in ADMINS]
# Rows written by the system: nobody edits them in the admin, owners included.
READ_ONLY = {
    "llm.UsageLog",
    "llm.BudgetNotice",
    "correo.Digest",
    "correo.ChatQuery",
    "ai_agents.WhatsAppTemplate",  # synced from the Graph API
}


def test_every_tenant_owned_admin_has_rows_to_probe() -> None:
    missing = [model._meta.label for model, _ in ADMINS if model not in BUILDERS]
    assert missing == []


def test_every_action_declares_its_permission() -> None:
    """Django offers an action without `permissions=[...]` to every role, read-only included
    (the mixin still re-checks "change" per row; the declaration keeps it off their menu)."""
    undeclared = [
        f"{model._meta.label}.{name}"
        for model, model_admin in ADMINS
        for func, name, _ in model_admin._get_base_actions()
        if not getattr(func, "allowed_permissions", None)
    ]
    assert undeclared == []


@pytest.fixture
def two_hats(tenant_a: Tenant, tenant_b: Tenant, outsider: Any) -> Any:
    """Owner of B (outsider's tenant) and only `agent` of A."""
    MembershipFactory(tenant=tenant_a, user=outsider.user, role=Membership.Role.AGENT)
    return outsider


@pytest.fixture
def rows(tenant_a: Tenant, tenant_b: Tenant, owner: Any, outsider: Any) -> Any:
    return {"a": rows_for(tenant_a, outsider.user), "b": rows_for(tenant_b, outsider.user)}


def _client(persona: Any) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def _action_names(client: Client, model: Any) -> list[str]:
    page = client.get(url(model, "changelist"))
    assert page.status_code == 200
    action_form = page.context.get("action_form")
    if action_form is None:
        return []
    return [name for name, _ in action_form.fields["action"].choices if name]


@pytest.mark.parametrize(("model", "model_admin"), ADMINS, ids=IDS)
def test_weaker_membership_writes_nothing(
    model: Any, model_admin: Any, two_hats: Any, admin_client: Client, rows: Any, tenant_a: Tenant
) -> None:
    row_a, row_b = rows["a"][model], rows["b"][model]
    data = form_data(admin_client.get(url(model, "change", row_a.pk)))
    client = _client(two_hats)
    before = snapshot()

    # Viewing is the agent role's right...
    assert client.get(url(model, "change", row_a.pk)).status_code == 200
    assert client.get(url(model, "history", row_a.pk)).status_code == 200
    # ...writing is not.
    assert client.post(url(model, "change", row_a.pk), data).status_code == 403
    assert client.get(url(model, "delete", row_a.pk)).status_code == 403
    assert client.post(url(model, "delete", row_a.pk), {"post": "yes"}).status_code == 403
    for action in _action_names(client, model):
        for extra in ({}, {"select_across": "1"}):
            client.post(
                url(model, "changelist"),
                {
                    "action": action,
                    "_selected_action": [str(row_a.pk), str(row_b.pk)],
                    "post": "yes",
                    "index": "0",
                    **extra,
                },
            )
    for custom in custom_object_urls(model_admin, row_a.pk):
        response = client.post(
            custom, {"files": [SimpleUploadedFile("x.txt", b"intruso", "text/plain")]}
        )
        assert response.status_code in {403, 405}, custom
    assert snapshot() == before

    a_before = snapshot(tenant_a.pk)
    client.post(url(model, "add"), {**data, "tenant": str(tenant_a.pk)})
    assert snapshot(tenant_a.pk) == a_before


@pytest.mark.parametrize(("model", "model_admin"), ADMINS, ids=IDS)
def test_autocomplete_offers_only_rows_of_tenants_one_manages(
    model: Any, model_admin: Any, two_hats: Any, rows: Any
) -> None:
    row_a, row_b = rows["a"][model], rows["b"][model]
    client = _client(two_hats)
    sources = autocomplete_sources(model) if model_admin.search_fields else []
    for source, field in sources:
        response = client.get(
            "/admin/autocomplete/",
            {
                "app_label": source._meta.app_label,
                "model_name": source._meta.model_name,
                "field_name": field,
                "term": "",
            },
        )
        assert response.status_code == 200, (source, field)
        ids = {item["id"] for item in response.json()["results"]}
        assert str(row_a.pk) not in ids, (source, field)
        assert str(row_b.pk) in ids, (source, field)


@pytest.mark.parametrize(("model", "model_admin"), ADMINS, ids=IDS)
def test_outsider_gets_404_for_real_rows_of_another_tenant(
    model: Any, model_admin: Any, outsider: Any, admin_client: Client, rows: Any
) -> None:
    row_a = rows["a"][model]
    data = form_data(admin_client.get(url(model, "change", row_a.pk)))
    client = _client(outsider)
    before = snapshot()

    listing = client.get(url(model, "changelist"))
    assert listing.status_code == 200
    assert url(model, "change", row_a.pk) not in listing.content.decode()
    for view in ("change", "history", "delete"):
        assert client.get(url(model, view, row_a.pk)).status_code == 404, view
    assert client.post(url(model, "change", row_a.pk), data).status_code == 404
    assert client.post(url(model, "delete", row_a.pk), {"post": "yes"}).status_code == 404
    for action in _action_names(client, model):
        client.post(
            url(model, "changelist"),
            {"action": action, "_selected_action": [str(row_a.pk)], "post": "yes"},
        )
    for custom in custom_object_urls(model_admin, row_a.pk):
        # Each view answers one method (405 for the other) and 404 for the row of another tenant.
        statuses = sorted([client.get(custom).status_code, client.post(custom).status_code])
        assert statuses == [404, 405], custom
    assert snapshot() == before


@pytest.mark.parametrize(("model", "model_admin"), ADMINS, ids=IDS)
def test_owner_of_the_rows_tenant_may_write_them(
    model: Any, model_admin: Any, owner: Any, tenant_a: Tenant
) -> None:
    """The control of the probes above: the same POST from the row's owner is accepted."""
    row_a = rows_for(tenant_a, owner.user)[model]
    client = _client(owner)
    data = form_data(client.get(url(model, "change", row_a.pk)))
    response = client.post(url(model, "change", row_a.pk), data)
    if model._meta.label in READ_ONLY:
        assert response.status_code == 403
    else:
        assert response.status_code == 302, response.content.decode()[:3000]


@pytest.mark.parametrize(("model", "model_admin"), ADMINS, ids=IDS)
def test_forms_list_no_user_of_another_tenant(
    model: Any, model_admin: Any, owner: Any, outsider: Any, tenant_a: Tenant
) -> None:
    """A user select (e.g. "created by") offers members of one's tenants, not every account
    of the platform."""
    row_a = rows_for(tenant_a, owner.user)[model]
    client = _client(owner)
    pages = [client.get(url(model, "change", row_a.pk)), client.get(url(model, "add"))]
    shown = [page.content.decode() for page in pages if page.status_code == 200]
    assert shown, "no page of this admin renders for the owner"
    for html in shown:
        assert outsider.user.username not in html


AGENT_FORM = {
    "name": "Soporte",
    "system_prompt": "Eres {{agent_name}}.",
    "provider": "default",
    "temperature": "0.5",
    "max_output_tokens": "512",
    "tools_enabled": "[]",
    "fallback_message": "Perdón.",
    "escalation_message": "Le paso con alguien.",
    "is_active": "on",
}


def test_a_row_cannot_point_at_rows_of_another_tenant(
    owner: Any, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    """Owner of both tenants: an agent of A linked to B's knowledge base is a form error
    (each tenant's agents answer from that tenant's knowledge only)."""
    MembershipFactory(tenant=tenant_b, user=owner.user, role=Membership.Role.OWNER)
    kb_b = rows_for(tenant_b, owner.user)[KnowledgeBase]
    before = snapshot()

    response = _client(owner).post(
        url(Agent, "add"),
        {**AGENT_FORM, "tenant": str(tenant_a.pk), "knowledge_bases": [str(kb_b.pk)]},
    )

    assert response.status_code == 200
    assert "knowledge_bases" in response.context["adminform"].form.errors
    assert snapshot() == before

    kb_a = rows_for(tenant_a, owner.user)[KnowledgeBase]
    response = _client(owner).post(
        url(Agent, "add"),
        {**AGENT_FORM, "tenant": str(tenant_a.pk), "knowledge_bases": [str(kb_a.pk)]},
    )
    assert response.status_code == 302
    agent = Agent.objects.for_tenant(tenant_a).get(name="Soporte")
    with tenant_scope(tenant_a):
        assert list(agent.knowledge_bases.all()) == [kb_a]
