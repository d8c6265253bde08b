"""No /api/v1 response carries a secret: the WhatsApp access token, HTTP tool header values, the
handoff webhook secret and API keys (their hash; the key itself only in its own creation
response) are write-only, reported as "configured" flags. The e-mail webhook URL (its path token
lets anyone post mail to the agent) goes only to who configures channels: owners, admins and
API keys, never to the read-only `agent` role.

Two tenants, each with every kind of secret; a user who owns tenant A and is an `agent` in B."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from rest_framework.test import APIClient

from ai_agents.models import ChannelBinding, HandoffSettings, HttpTool
from ai_agents.services.agents import agent_create
from erp.tenancy.models import ApiKey, Membership, Tenant
from erp.tenancy.scoping import tenant_scope
from erp.tenancy.services import apikey_create
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import api_client_for

V1 = "/api/v1"


@dataclass
class Secrets:
    """One tenant's secret values, and the ids of its channels."""

    values: dict[str, str] = field(default_factory=dict)
    email_token: str = ""
    channel_ids: list[str] = field(default_factory=list)
    agent_id: str = ""
    bodies: list[str] = field(default_factory=list)  # write responses, checked like reads


def _given_every_secret(tenant: Tenant, api: APIClient) -> Secrets:
    slug = tenant.slug
    found = Secrets()
    with tenant_scope(tenant):
        HttpTool.objects.create(
            tenant=tenant,
            name="pedido",
            description="Consulta un pedido.",
            url_template=f"https://api.{slug}.test/pedidos/{{id}}",
            headers_json=json.dumps(
                {"Authorization": f"Bearer {slug}-tool-secret", "X-Key": f"{slug}-header-secret"}
            ),
        )
    agent = agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "tools_enabled": ["pedido"]},
    )
    found.agent_id = str(agent.pk)
    created = api.post(
        f"{V1}/channels",
        {
            "type": "whatsapp",
            "agent": found.agent_id,
            "phone_number_id": str(1000000 + tenant.pk),
            "access_token": f"EAAG-{slug}-whatsapp-secret",
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["has_access_token"] is True
    whatsapp_id = created.json()["id"]
    patched = api.patch(
        f"{V1}/channels/{whatsapp_id}",
        {"access_token": f"EAAG-{slug}-rotated-secret"},
        format="json",
    )
    assert patched.status_code == 200, patched.content
    email = api.post(
        f"{V1}/channels",
        {"type": "email", "agent": found.agent_id, "address": f"ayuda@{slug}.test"},
        format="json",
    )
    assert email.status_code == 201, email.content
    webchat = api.post(
        f"{V1}/channels",
        {"type": "webchat", "agent": found.agent_id, "allowed_origins": [f"https://{slug}.test"]},
        format="json",
    )
    assert webchat.status_code == 201, webchat.content
    found.bodies += [created.content.decode(), patched.content.decode(), webchat.content.decode()]
    found.channel_ids = [whatsapp_id, email.json()["id"], webchat.json()["id"]]
    key = apikey_create(tenant=tenant, name="integración")
    with tenant_scope(tenant):
        binding = ChannelBinding.objects.get(pk=email.json()["id"])
        found.email_token = binding.token
        stored = ChannelBinding.objects.get(pk=whatsapp_id)
        assert stored.access_token == f"EAAG-{slug}-rotated-secret"
        HandoffSettings.objects.create(
            tenant=tenant,
            webhook_url=f"https://hooks.{slug}.test/erp",
            webhook_secret=f"{slug}-handoff-secret",
        )
        key_hash = ApiKey.objects.get(pk=key.api_key.pk).key_hash
    found.values = {
        "whatsapp token": f"EAAG-{slug}-whatsapp-secret",
        "rotated whatsapp token": f"EAAG-{slug}-rotated-secret",
        "tool header": f"{slug}-tool-secret",
        "second tool header": f"{slug}-header-secret",
        "handoff secret": f"{slug}-handoff-secret",
        "api key": key.key,
        "api key hash": key_hash,
        "api client key hash": api.api_key.api_key.key_hash,  # type: ignore[attr-defined]
    }
    return found


def _read_everything(client: APIClient, found: Secrets) -> list[str]:
    """Every GET of the API that shows the tenant's configuration."""
    urls = [
        f"{V1}/tenant",
        f"{V1}/channels",
        *(f"{V1}/channels/{pk}" for pk in found.channel_ids),
        f"{V1}/agents",
        f"{V1}/agents/{found.agent_id}",
        f"{V1}/api-keys",
        f"{V1}/conversations",
        f"{V1}/usage",
    ]
    bodies = []
    for url in urls:
        response = client.get(url)
        assert response.status_code in (200, 403), (url, response.status_code)
        bodies.append(response.content.decode())
    return bodies


def _leaks(bodies: list[str], values: dict[str, str]) -> list[str]:
    return [name for name, value in values.items() for body in bodies if value in body]


@pytest.mark.django_db
def test_no_response_carries_a_secret_and_the_mail_webhook_only_reaches_managers(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    api_a, api_b = api_client_for(tenant_a), api_client_for(tenant_b)
    secrets_a = _given_every_secret(tenant_a, api_a)
    secrets_b = _given_every_secret(tenant_b, api_b)
    both = UserFactory(username="both@acme.test")
    MembershipFactory(tenant=tenant_a, user=both, role=Membership.Role.OWNER)
    MembershipFactory(tenant=tenant_b, user=both, role=Membership.Role.AGENT)
    admin_b = UserFactory(username="admin@globex.test")
    MembershipFactory(tenant=tenant_b, user=admin_b, role=Membership.Role.ADMIN)
    as_owner_of_a, as_agent_of_b, as_admin_of_b = APIClient(), APIClient(), APIClient()
    as_owner_of_a.force_login(both)
    as_owner_of_a.defaults["HTTP_X_TENANT"] = tenant_a.slug
    as_agent_of_b.force_login(both)
    as_agent_of_b.defaults["HTTP_X_TENANT"] = tenant_b.slug
    as_admin_of_b.force_login(admin_b)
    every_secret = {
        **{f"A {k}": v for k, v in secrets_a.values.items()},
        **{f"B {k}": v for k, v in secrets_b.values.items()},
    }

    managers = {
        "api key of A": (api_a, secrets_a),
        "owner of A": (as_owner_of_a, secrets_a),
        "api key of B": (api_b, secrets_b),
        "admin of B": (as_admin_of_b, secrets_b),
    }
    for who, (client, found) in managers.items():
        bodies = _read_everything(client, found)
        assert _leaks(bodies + found.bodies, every_secret) == [], who
        webhook = client.get(f"{V1}/channels/{found.channel_ids[1]}").json()["webhook_url"]
        assert webhook.endswith(f"/webhooks/email/{found.email_token}"), who
    # The other tenant's mail token reaches neither API key nor manager.
    for who, (client, found) in managers.items():
        other = secrets_b if found is secrets_a else secrets_a
        assert _leaks(_read_everything(client, found), {"token": other.email_token}) == [], who

    agent_bodies = _read_everything(as_agent_of_b, secrets_b)
    assert _leaks(agent_bodies, every_secret) == []
    assert _leaks(agent_bodies, {"A": secrets_a.email_token, "B": secrets_b.email_token}) == []
    email_channel = as_agent_of_b.get(f"{V1}/channels/{secrets_b.channel_ids[1]}").json()
    assert email_channel["address"] == "ayuda@globex.test"
    assert "webhook_url" not in email_channel
    with tenant_scope(tenant_b):  # reading changed nothing
        assert ChannelBinding.objects.get(pk=secrets_b.channel_ids[1]).token == (
            secrets_b.email_token
        )
