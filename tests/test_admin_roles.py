"""Roles inside one tenant: the read-only `agent` runs no action, only owners change
memberships and roles, and never their own."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from ai_agents.models import Document
from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from erp.tenancy.models import ApiKey, Membership, Tenant
from erp.tenancy.services import apikey_create
from erp.testing.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _role(membership: Membership) -> str:
    return Membership.objects.unscoped().get(pk=membership.pk).role


@pytest.fixture
def admin_member(tenant_a: Tenant) -> Membership:
    user = UserFactory(username="admin@acme.test")
    return MembershipFactory(tenant=tenant_a, user=user, role=Membership.Role.ADMIN)


def test_agent_role_is_offered_and_runs_no_action(member: Any, tenant_a: Tenant) -> None:
    key = apikey_create(tenant=tenant_a, name="integración").api_key
    kb = knowledge_base_create(tenant=tenant_a, name="Ayuda")
    document = document_add(kb=kb, data=b"Abrimos a las 8.", filename="h.txt").document
    client = _client(member.user)

    for page, action, pk in (
        ("/admin/tenancy/apikey/", "revoke_keys", key.pk),
        ("/admin/ai_agents/document/", "reindex", document.pk),
    ):
        listing = client.get(page)
        assert listing.status_code == 200
        assert f'value="{action}"' not in listing.content.decode()
        client.post(page, {"action": action, "_selected_action": [str(pk)], "post": "yes"})

    assert ApiKey.objects.unscoped().get(pk=key.pk).revoked_at is None
    stored = Document.objects.unscoped().get(pk=document.pk)
    assert (stored.status, stored.updated_at) == (document.status, document.updated_at)


def test_admin_cannot_promote_itself_nor_change_memberships(
    admin_member: Membership, member: Any
) -> None:
    client = _client(admin_member.user)
    own = f"/admin/tenancy/membership/{admin_member.pk}/change/"
    other = f"/admin/tenancy/membership/{member.membership.pk}/change/"

    assert client.post(own, {"role": "owner"}).status_code == 403
    assert client.post(other, {"role": "admin"}).status_code == 403
    assert (
        client.post(
            f"/admin/tenancy/membership/{member.membership.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert _role(admin_member) == "admin"
    assert _role(member.membership) == "agent"


def test_owner_changes_others_roles_but_not_its_own(owner: Any, member: Any) -> None:
    client = _client(owner.user)
    own = f"/admin/tenancy/membership/{owner.membership.pk}/change/"
    other = f"/admin/tenancy/membership/{member.membership.pk}/change/"

    assert client.post(own, {"role": "agent"}).status_code == 403
    assert (
        client.post(
            f"/admin/tenancy/membership/{owner.membership.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert _role(owner.membership) == "owner"

    assert client.post(other, {"role": "admin"}).status_code == 302
    assert _role(member.membership) == "admin"


def test_owner_of_another_tenant_cannot_change_roles_where_it_is_admin(
    admin_member: Membership, member: Any, tenant_b: Tenant
) -> None:
    MembershipFactory(tenant=tenant_b, user=admin_member.user, role=Membership.Role.OWNER)
    client = _client(admin_member.user)
    other = f"/admin/tenancy/membership/{member.membership.pk}/change/"

    assert client.post(other, {"role": "owner"}).status_code == 403
    assert _role(member.membership) == "agent"
