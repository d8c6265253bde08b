"""`/`: the staff start page. Anonymous visitors go to the login; each tenant of the member has
its own checklist, ticked from that tenant's rows only; the admin's "Ver el sitio" leads here."""

from __future__ import annotations

import pytest
from django.test import Client

from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from ai_agents.tests.handoff_helpers import agent_for, binding_for, conversation_make
from erp.llm.models import UsageLog
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db

STEPS = ["agent", "documents", "try", "channel", "teammate"]


def _checklists(persona: Persona) -> dict[str, dict[str, bool]]:
    client = Client()
    client.force_login(persona.user)
    response = client.get("/")
    assert response.status_code == 200
    return {
        item["tenant"].slug: {step.key: step.done for step in item["steps"]}
        for item in response.context["tenants"]
    }


def _set_up_everything(tenant: Tenant) -> None:
    agent = agent_for(tenant)
    kb = knowledge_base_create(tenant=tenant, name="Ayuda")
    document_add(kb=kb, data=b"Abrimos a las 8.", filename="horario.txt", enqueue=False)
    binding_for(agent)
    conversation_make(agent)
    MembershipFactory.create(tenant=tenant, role=Membership.Role.AGENT)


def test_anonymous_goes_to_the_login() -> None:
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/"


def test_a_new_tenant_starts_with_nothing_ticked_and_links_to_each_place(owner: Persona) -> None:
    client = Client()
    client.force_login(owner.user)
    page = client.get("/").content.decode()
    assert _checklists(owner) == {"acme": dict.fromkeys(STEPS, False)}
    tenant_id = owner.tenant.pk
    for link in (
        f'href="/admin/ai_agents/agent/add/?tenant={tenant_id}"',
        f'href="/admin/ai_agents/knowledgebase/add/?tenant={tenant_id}"',
        f'href="/admin/ai_agents/channelbinding/add/?tenant={tenant_id}"',
        'href="/team/acme/"',
        'href="/inbox/"',
        'href="/stats/"',
        'href="/admin/"',
    ):
        assert link in page
    assert "Puesta en marcha: 0 de 5 pasos hechos." in page
    admin_index = client.get("/admin/").content.decode()
    assert 'href="/"' in admin_index  # "Ver el sitio" leads to this page, not back to the admin


def test_try_it_leads_to_the_first_agents_playground(owner: Persona) -> None:
    agent = agent_for(owner.tenant)
    client = Client()
    client.force_login(owner.user)
    page = client.get("/").content.decode()
    assert f'href="/admin/ai_agents/agent/{agent.pk}/playground/"' in page
    assert client.get(f"/admin/ai_agents/agent/{agent.pk}/playground/").status_code == 200


def test_each_tenant_counts_only_its_own_rows(owner: Persona, outsider: Persona) -> None:
    _set_up_everything(outsider.tenant)

    assert _checklists(owner) == {"acme": dict.fromkeys(STEPS, False)}
    assert _checklists(outsider) == {"globex": dict.fromkeys(STEPS, True)}

    # A playground try (a usage row) ticks "Probarlo" without any conversation.
    UsageLog.objects.for_tenant(owner.tenant).create(tenant=owner.tenant, operation="playground")
    assert _checklists(owner)["acme"]["try"] is True

    # A member of both tenants sees each checklist under its own tenant.
    MembershipFactory.create(tenant=outsider.tenant, user=owner.user)
    both = _checklists(owner)
    assert both["acme"] == {**dict.fromkeys(STEPS, False), "try": True}
    assert both["globex"] == dict.fromkeys(STEPS, True)
