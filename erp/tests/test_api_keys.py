"""API keys: shown once, stored hashed, constant-time compare; revoked/unknown -> 401 JSON."""

import hashlib

import pytest
from rest_framework.test import APIClient

from erp.tenancy.models import ApiKey
from erp.tenancy.services import apikey_create, apikey_revoke

pytestmark = pytest.mark.django_db


def test_key_is_stored_hashed_and_authenticates(tenant_a):
    created = apikey_create(tenant=tenant_a, name="zapier")
    row = ApiKey.objects.for_tenant(tenant_a).get(pk=created.api_key.pk)

    assert created.key.startswith(f"erp_{row.prefix}_")
    assert row.key_hash == hashlib.sha256(created.key.encode()).hexdigest()
    assert created.key not in str(ApiKey.objects.for_tenant(tenant_a).values().get())

    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {created.key}")
    response = client.get("/api/v1/tenant")
    assert response.status_code == 200
    assert response.json()["slug"] == "acme"
    row.refresh_from_db()
    assert row.last_used_at is not None


@pytest.mark.parametrize(
    "header",
    [
        "Bearer erp_000000000000_" + "x" * 43,  # unknown prefix
        "Bearer not-a-key",
        "Bearer ",
    ],
)
def test_unknown_or_malformed_key_is_401_json(tenant_a, header):
    response = APIClient(HTTP_AUTHORIZATION=header).get("/api/v1/tenant")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "authentication_failed"
    assert response["WWW-Authenticate"] == "Bearer"


def test_missing_key_is_401_json(tenant_a):
    response = APIClient().get("/api/v1/tenant")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_right_prefix_wrong_secret_is_401(tenant_a):
    created = apikey_create(tenant=tenant_a, name="x")
    forged = created.key[:-4] + "AAAA"
    response = APIClient(HTTP_AUTHORIZATION=f"Bearer {forged}").get("/api/v1/tenant")
    assert response.status_code == 401


def test_revoked_key_is_401(tenant_a):
    created = apikey_create(tenant=tenant_a, name="old")
    apikey_revoke(api_key=created.api_key)
    response = APIClient(HTTP_AUTHORIZATION=f"Bearer {created.key}").get("/api/v1/tenant")
    assert response.status_code == 401
    assert response.json()["error"]["message"]


def test_key_of_inactive_tenant_is_401(tenant_a):
    created = apikey_create(tenant=tenant_a, name="x")
    tenant_a.is_active = False
    tenant_a.save()
    response = APIClient(HTTP_AUTHORIZATION=f"Bearer {created.key}").get("/api/v1/tenant")
    assert response.status_code == 401


def test_owner_creates_key_shown_once_then_only_prefix(owner_client, owner):
    response = owner_client.post("/api/v1/api-keys", {"name": "crm"}, format="json")
    assert response.status_code == 201
    key = response.json()["key"]
    key_id = response.json()["id"]

    detail = owner_client.get(f"/api/v1/api-keys/{key_id}")
    assert detail.status_code == 200
    assert "key" not in detail.json()
    assert key.startswith(f"erp_{detail.json()['prefix']}_")
    listing = owner_client.get("/api/v1/api-keys").json()
    assert [k["name"] for k in listing["results"]] == ["crm"]
    assert listing["next"] is None

    works = APIClient(HTTP_AUTHORIZATION=f"Bearer {key}").get("/api/v1/tenant")
    assert works.status_code == 200


def test_owner_revokes_key(owner_client, owner):
    created = apikey_create(tenant=owner.tenant, name="crm")
    response = owner_client.delete(f"/api/v1/api-keys/{created.api_key.pk}")
    assert response.status_code == 200
    assert response.json()["active"] is False
    after = APIClient(HTTP_AUTHORIZATION=f"Bearer {created.key}").get("/api/v1/tenant")
    assert after.status_code == 401


def test_agent_role_and_api_keys_cannot_manage_keys(member_client, api_a):
    before = list(ApiKey.objects.unscoped().values_list("pk", "name", "revoked_at"))
    assert len(before) == 1  # api_a's own key
    assert member_client.get("/api/v1/api-keys").status_code == 403
    assert api_a.post("/api/v1/api-keys", {"name": "x"}, format="json").status_code == 403
    assert list(ApiKey.objects.unscoped().values_list("pk", "name", "revoked_at")) == before
