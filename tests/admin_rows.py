"""One real row per tenant for every model with an admin page, built through the services, and
the secret values they hold (the admin must render none of them, to nobody).

The admin-rights tests are parametrized over `admin.site._registry`: a new admin of a
tenant-owned model fails them until a builder for its rows is added here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.db import models
from django.utils import timezone

from ai_agents.models import (
    Agent,
    CannedReply,
    ChannelBinding,
    Document,
    HandoffSettings,
    HttpTool,
    KnowledgeBase,
    TemplateFollowup,
    WhatsAppTemplate,
)
from ai_agents.services.agents import agent_create
from ai_agents.services.canned_replies import canned_reply_create
from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from correo.models import ChatQuery, Digest
from erp.llm.models import BudgetNotice, UsageLog
from erp.tenancy.models import ApiKey, Membership, Tenant
from erp.tenancy.services import apikey_create
from erp.testing.factories import MembershipFactory, UserFactory


def secrets_of(tenant: Tenant) -> dict[str, str]:
    """The write-only secrets stored for `tenant` (distinct per tenant, easy to grep)."""
    return {
        "access_token": f"EAAG-whatsapp-token-{tenant.slug}-7f3a",
        "webhook_secret": f"hmac-handoff-secret-{tenant.slug}-9c1e",
        "header": f"Bearer tool-header-secret-{tenant.slug}-4b2d",
    }


def _agent(tenant: Tenant) -> Agent:
    agent = Agent.objects.for_tenant(tenant).filter(name="Lucía").first()
    return agent or agent_create(
        tenant=tenant, data={"name": "Lucía", "system_prompt": "Eres Lucía."}
    )


def _kb(tenant: Tenant) -> KnowledgeBase:
    kb = KnowledgeBase.objects.for_tenant(tenant).filter(name="Ayuda").first()
    return kb or knowledge_base_create(tenant=tenant, name="Ayuda")


def _membership(tenant: Tenant, user: Any) -> Membership:
    colleague = UserFactory(username=f"colega@{tenant.slug}.test")
    return MembershipFactory(tenant=tenant, user=colleague, role=Membership.Role.ADMIN)


def _api_key(tenant: Tenant, user: Any) -> ApiKey:
    return apikey_create(tenant=tenant, name=f"integración {tenant.slug}").api_key


def _document(tenant: Tenant, user: Any) -> Document:
    added = document_add(
        kb=_kb(tenant), data=f"Horario de {tenant.name}: de 8 a 20.".encode(), filename="h.txt"
    )
    return added.document


def _http_tool(tenant: Tenant, user: Any) -> HttpTool:
    header = secrets_of(tenant)["header"]
    return HttpTool.objects.for_tenant(tenant).create(
        tenant=tenant,
        name="consultar_pedido",
        description="Estado de un pedido",
        url_template="https://tienda.example/pedidos/{id}",
        headers_json=json.dumps({"Authorization": header}),
        args_schema={"type": "object", "properties": {"id": {"type": "string"}}},
    )


def _handoff(tenant: Tenant, user: Any) -> HandoffSettings:
    return HandoffSettings.objects.for_tenant(tenant).create(
        tenant=tenant,
        notify_emails=[f"equipo@{tenant.slug}.test"],
        webhook_url=f"https://hooks.{tenant.slug}.example/escalations",
        webhook_secret=secrets_of(tenant)["webhook_secret"],
    )


def _channel(tenant: Tenant, user: Any) -> ChannelBinding:
    number = "1065403522" + str(tenant.pk).zfill(5)
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant,
        agent=_agent(tenant),
        type=ChannelBinding.Type.WHATSAPP,
        name=f"WhatsApp {tenant.name}",
        phone_number_id=number,
        access_token=secrets_of(tenant)["access_token"],
    )


def _template(tenant: Tenant, user: Any) -> WhatsAppTemplate:
    number = "2065403522" + str(tenant.pk).zfill(5)
    binding = ChannelBinding.objects.for_tenant(tenant).filter(phone_number_id=number).first()
    binding = binding or ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant,
        agent=_agent(tenant),
        type=ChannelBinding.Type.WHATSAPP,
        name=f"Plantillas {tenant.name}",
        phone_number_id=number,
        waba_id="1022901293" + str(tenant.pk).zfill(5),
        access_token=secrets_of(tenant)["access_token"],
    )
    template = WhatsAppTemplate.objects.for_tenant(tenant).filter(binding=binding).first()
    return template or WhatsAppTemplate.objects.for_tenant(tenant).create(
        tenant=tenant,
        binding=binding,
        name="seguimiento",
        language="es",
        category="utility",
        status="APPROVED",
        body_text=f"¿Pudimos ayudarle, {{{{1}}}}? {tenant.name}",
        variables=["1"],
        synced_at=timezone.now(),
    )


def _followup(tenant: Tenant, user: Any) -> TemplateFollowup:
    template = _template(tenant, user)
    return TemplateFollowup.objects.for_tenant(tenant).create(
        tenant=tenant, agent=template.binding.agent, template=template, variables=["{nombre}"]
    )


def _digest(tenant: Tenant, user: Any) -> Digest:
    return Digest.objects.for_tenant(tenant).create(
        tenant=tenant, owner=user, generated_at=timezone.now(), resumen=f"Resumen {tenant.name}"
    )


def _chat_query(tenant: Tenant, user: Any) -> ChatQuery:
    return ChatQuery.objects.for_tenant(tenant).create(
        tenant=tenant, owner=user, question=f"¿Qué escribió {tenant.name}?"
    )


def _canned(tenant: Tenant, user: Any) -> CannedReply:
    return canned_reply_create(
        tenant_id=tenant.pk, shortcut="hola", title="Saludo", text="Hola {{contact.name}}"
    )


def _usage(tenant: Tenant, user: Any) -> UsageLog:
    return UsageLog.objects.for_tenant(tenant).create(
        tenant=tenant, operation="llm_request", provider="google", model="gemini-2.5-flash"
    )


def _budget_notice(tenant: Tenant, user: Any) -> BudgetNotice:
    return BudgetNotice.objects.for_tenant(tenant).create(
        tenant=tenant, month="2026-11", threshold=80, spent_usd=8, budget_usd=10
    )


BUILDERS: dict[type[models.Model], Callable[[Tenant, Any], models.Model]] = {
    Tenant: lambda tenant, user: tenant,
    Membership: _membership,
    ApiKey: _api_key,
    KnowledgeBase: lambda tenant, user: _kb(tenant),
    Document: _document,
    Agent: lambda tenant, user: _agent(tenant),
    HttpTool: _http_tool,
    HandoffSettings: _handoff,
    ChannelBinding: _channel,
    Digest: _digest,
    ChatQuery: _chat_query,
    UsageLog: _usage,
    BudgetNotice: _budget_notice,
    CannedReply: _canned,
    WhatsAppTemplate: _template,
    TemplateFollowup: _followup,
}


def rows_for(tenant: Tenant, user: Any) -> dict[type[models.Model], models.Model]:
    """A row of every admin-registered tenant model in `tenant` (`user` owns the personal ones)."""
    return {model: build(tenant, user) for model, build in BUILDERS.items()}
