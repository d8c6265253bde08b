"""Write-only secrets in the admin: the WhatsApp access token, the handoff webhook secret and
the HTTP tool headers are never rendered, to no role; a badge says whether one is set; owners
and admins set or replace them, and leaving the field empty keeps the stored one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client

from ai_agents.models import ChannelBinding, HandoffSettings, HttpTool
from erp.crypto import encrypted_fields
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory, UserFactory
from tests.admin_probe import form_data, tenant_admins, url
from tests.admin_rows import rows_for, secrets_of

pytestmark = pytest.mark.django_db

ADMINS = tenant_admins()
SECRET_FIELDS = {
    ChannelBinding: "access_token",
    HandoffSettings: "webhook_secret",
    HttpTool: "headers_json",
}


def test_every_secret_field_with_an_admin_is_covered() -> None:
    registered = {
        (model, field.name) for model, field in encrypted_fields() if model in admin.site._registry
    }
    assert registered == set(SECRET_FIELDS.items())


@pytest.fixture(params=["owner", "admin", "agent"])
def persona_user(request: Any, tenant_a: Tenant) -> Any:
    user = UserFactory(username=f"{request.param}-role@acme.test")
    MembershipFactory(tenant=tenant_a, user=user, role=request.param)
    return user


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_no_admin_page_renders_a_secret(persona_user: Any, tenant_a: Tenant) -> None:
    rows = rows_for(tenant_a, persona_user)
    client = _client(persona_user)
    secrets = list(secrets_of(tenant_a).values())
    rendered = 0
    for model, _ in ADMINS:
        pk = rows[model].pk
        for page in (
            url(model, "changelist"),
            url(model, "add"),
            url(model, "change", pk),
            url(model, "history", pk),
            url(model, "delete", pk),
        ):
            response = client.get(page)
            if response.status_code != 200:
                continue
            rendered += 1
            html = response.content.decode()
            assert [s for s in secrets if s in html] == [], page
    assert rendered >= 3 * len(ADMINS)


@pytest.mark.parametrize("model", list(SECRET_FIELDS), ids=lambda m: m._meta.label)
def test_badge_says_whether_a_secret_is_set(
    model: Any, persona_user: Any, tenant_a: Tenant
) -> None:
    row = rows_for(tenant_a, persona_user)[model]
    client = _client(persona_user)
    html = client.get(url(model, "change", row.pk)).content.decode()
    assert 'class="secret-badge secret-set"' in html
    assert "configurado" in html

    type(row).objects.unscoped().filter(pk=row.pk).update(**{SECRET_FIELDS[model]: ""})
    html = client.get(url(model, "change", row.pk)).content.decode()
    assert 'class="secret-badge secret-unset"' in html
    assert "sin configurar" in html


def _stored(model: Any, pk: Any) -> str:
    return getattr(model.objects.unscoped().get(pk=pk), SECRET_FIELDS[model])


NEW_VALUES = {
    ChannelBinding: "EAAG-replaced-token-0001",
    HandoffSettings: "replaced-handoff-secret-0002",
    HttpTool: json.dumps({"X-Api-Key": "replaced-header-0003"}),
}


@pytest.mark.parametrize("role", [Membership.Role.OWNER, Membership.Role.ADMIN])
@pytest.mark.parametrize("model", list(SECRET_FIELDS), ids=lambda m: m._meta.label)
def test_writers_replace_a_secret_and_empty_keeps_it(
    model: Any, role: str, tenant_a: Tenant
) -> None:
    user = UserFactory(username=f"{role}-writer@acme.test")
    MembershipFactory(tenant=tenant_a, user=user, role=role)
    row = rows_for(tenant_a, user)[model]
    field = SECRET_FIELDS[model]
    client = _client(user)
    change = url(model, "change", row.pk)
    stored = _stored(model, row.pk)

    data = form_data(client.get(change))
    assert data.get(field) == ""  # the form does not carry the stored value back
    response = client.post(change, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert _stored(model, row.pk) == stored

    response = client.post(change, {**data, field: NEW_VALUES[model]})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert _stored(model, row.pk) == NEW_VALUES[model]


def test_agent_role_cannot_replace_a_secret(member: Any, tenant_a: Tenant) -> None:
    rows = rows_for(tenant_a, member.user)
    client = _client(member.user)
    for model, field in SECRET_FIELDS.items():
        pk = rows[model].pk
        stored = _stored(model, pk)
        response = client.post(url(model, "change", pk), {field: NEW_VALUES[model]})
        assert response.status_code == 403
        assert _stored(model, pk) == stored


@pytest.mark.parametrize("model", list(SECRET_FIELDS), ids=lambda m: m._meta.label)
def test_a_typed_secret_is_not_echoed_after_a_form_error(
    model: Any, owner: Any, tenant_a: Tenant
) -> None:
    row = rows_for(tenant_a, owner.user)[model]
    client = _client(owner.user)
    change = url(model, "change", row.pk)
    data = form_data(client.get(change))
    broken = {"claim_lease_minutes": "0", "timeout_ms": "1", "phone_number_id": "no"}
    data.update({k: v for k, v in broken.items() if k in data})
    response = client.post(change, {**data, SECRET_FIELDS[model]: NEW_VALUES[model]})

    assert response.status_code == 200  # the form comes back with its errors
    assert response.context["adminform"].form.errors
    assert "replaced-" not in response.content.decode()
    assert _stored(model, row.pk) != NEW_VALUES[model]
