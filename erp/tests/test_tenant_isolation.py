"""Two tenants: the outsider gets 404 on every tenant-scoped route and changes nothing."""

import pytest
from django.db import connection

from erp.tenancy.models import ApiKey, Membership, Tenant
from erp.tenancy.scoping import TenantScopeError, all_tenants, tenant_scope
from erp.tenancy.services import apikey_create

pytestmark = pytest.mark.django_db


def test_default_manager_refuses_to_query_without_tenant(tenant_a, tenant_b):
    apikey_create(tenant=tenant_a, name="a")
    apikey_create(tenant=tenant_b, name="b")

    with pytest.raises(TenantScopeError):
        list(ApiKey.objects.all())
    with tenant_scope(tenant_a):
        assert [k.name for k in ApiKey.objects.all()] == ["a"]
    with tenant_scope(tenant_b):
        assert [k.name for k in ApiKey.objects.all()] == ["b"]
    with all_tenants():
        assert ApiKey.objects.count() == 2
    assert ApiKey.objects.for_tenant(tenant_b).count() == 1


def test_scope_is_inside_the_sql(tenant_a):
    with tenant_scope(tenant_a):
        sql = str(ApiKey.objects.filter(name="x").query)
    assert '"tenant_id" IN' in sql


def test_outsider_api_key_gets_404_on_other_tenants_key_and_changes_nothing(
    owner_client, outsider_client, owner
):
    created = apikey_create(tenant=owner.tenant, name="secret-integration")
    url = f"/api/v1/api-keys/{created.api_key.pk}"

    assert outsider_client.get(url).status_code == 404
    response = outsider_client.delete(url)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"

    created.api_key.refresh_from_db()
    assert created.api_key.revoked_at is None
    assert [k["name"] for k in outsider_client.get("/api/v1/api-keys").json()["results"]] == []
    # missing and not-yours look the same
    missing = outsider_client.get("/api/v1/api-keys/999999")
    assert missing.status_code == 404 and missing.json() == response.json()


def test_tenant_endpoint_shows_only_own_tenant(api_a, api_b):
    assert api_a.get("/api/v1/tenant").json()["slug"] == "acme"
    assert api_b.get("/api/v1/tenant").json()["slug"] == "globex"


def test_session_user_cannot_pick_a_tenant_they_do_not_belong_to(outsider_client, owner):
    response = outsider_client.get("/api/v1/tenant", HTTP_X_TENANT=owner.tenant.slug)
    assert response.status_code == 403


def test_admin_staff_see_only_their_tenant_rows(client, owner, outsider):
    theirs = apikey_create(tenant=outsider.tenant, name="globex-key")
    mine = apikey_create(tenant=owner.tenant, name="acme-key")
    client.force_login(owner.user)

    listing = client.get("/admin/tenancy/apikey/")
    assert listing.status_code == 200
    assert b"acme-key" in listing.content and b"globex-key" not in listing.content
    assert client.get(f"/admin/tenancy/apikey/{mine.api_key.pk}/change/").status_code == 200

    for suffix in ("change/", "delete/", "history/"):
        url = f"/admin/tenancy/apikey/{theirs.api_key.pk}/{suffix}"
        assert client.get(url).status_code == 404, url
    response = client.post(f"/admin/tenancy/apikey/{theirs.api_key.pk}/change/", {"name": "pwned"})
    assert response.status_code == 404
    response = client.post(f"/admin/tenancy/apikey/{theirs.api_key.pk}/delete/", {"post": "yes"})
    assert response.status_code == 404
    response = client.post(
        "/admin/tenancy/apikey/",
        {"action": "revoke_keys", "_selected_action": [theirs.api_key.pk]},
    )
    theirs.api_key.refresh_from_db()
    assert theirs.api_key.name == "globex-key" and theirs.api_key.revoked_at is None


def test_admin_tenant_and_membership_pages_are_scoped(client, owner, outsider):
    client.force_login(owner.user)
    assert client.get(f"/admin/tenancy/tenant/{owner.tenant.pk}/change/").status_code == 200
    assert client.get(f"/admin/tenancy/tenant/{outsider.tenant.pk}/change/").status_code == 404
    other = Membership.objects.for_tenant(outsider.tenant).get()
    assert client.get(f"/admin/tenancy/membership/{other.pk}/change/").status_code == 404
    response = client.post(
        f"/admin/tenancy/tenant/{outsider.tenant.pk}/change/",
        {"name": "pwned", "timezone": "UTC", "language": "es"},
    )
    assert response.status_code == 404
    assert Tenant.objects.get(pk=outsider.tenant.pk).name == "Globex"
    tenants = client.get("/admin/tenancy/tenant/")
    assert b"Acme" in tenants.content and b"Globex" not in tenants.content


def test_admin_staff_creates_key_in_own_tenant(client, owner):
    client.force_login(owner.user)
    response = client.post("/admin/tenancy/apikey/add/", {"name": "from-admin"}, follow=True)
    assert response.status_code == 200
    key = ApiKey.objects.for_tenant(owner.tenant).get(name="from-admin")
    shown = [str(m) for m in response.context["messages"]]
    assert any(f"erp_{key.prefix}_" in m for m in shown)


def test_admin_agent_role_is_read_only(client, member):
    key = apikey_create(tenant=member.tenant, name="k")
    client.force_login(member.user)
    assert client.get("/admin/tenancy/apikey/").status_code == 200
    assert client.get("/admin/tenancy/apikey/add/").status_code == 403
    response = client.post(f"/admin/tenancy/apikey/{key.api_key.pk}/change/", {"name": "new"})
    assert response.status_code == 403


def test_superuser_sees_all_tenants(admin_client, owner, outsider):
    apikey_create(tenant=owner.tenant, name="acme-key")
    apikey_create(tenant=outsider.tenant, name="globex-key")
    listing = admin_client.get("/admin/tenancy/apikey/")
    assert b"acme-key" in listing.content and b"globex-key" in listing.content


def test_tenant_id_column_on_tenant_owned_tables():
    with connection.cursor() as cursor:
        for table in ("tenancy_membership", "tenancy_apikey", "llm_usagelog"):
            cursor.execute(
                "SELECT is_nullable FROM information_schema.columns "
                "WHERE table_name = %s AND column_name = 'tenant_id'",
                [table],
            )
            assert cursor.fetchone() == ("NO",), table
