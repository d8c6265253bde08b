"""Reads for the start page's checklist: what a tenant has set up so far, from its own rows."""

from __future__ import annotations

from dataclasses import dataclass

from ai_agents.models import Agent, ChannelBinding, Conversation, Document, KnowledgeBase
from erp.llm.models import UsageLog
from erp.tenancy.models import Membership, Tenant

# Written by the agent playground (a UsageLog operation); a conversation counts too.
PLAYGROUND_OPERATION = "playground"


@dataclass(frozen=True)
class SetupProgress:
    tenant: Tenant
    has_agent: bool
    has_documents: bool
    knowledge_base_id: str | None  # where "add documents" leads when a base exists
    has_tried: bool
    has_channel: bool
    has_teammate: bool


def setup_progress(*, tenant: Tenant) -> SetupProgress:
    kb = KnowledgeBase.objects.for_tenant(tenant).order_by("created_at").values("pk").first()
    tried = (
        Conversation.objects.for_tenant(tenant).exists()
        or UsageLog.objects.for_tenant(tenant).filter(operation=PLAYGROUND_OPERATION).exists()
    )
    return SetupProgress(
        tenant=tenant,
        has_agent=Agent.objects.for_tenant(tenant).exists(),
        has_documents=Document.objects.for_tenant(tenant).exists(),
        knowledge_base_id=str(kb["pk"]) if kb else None,
        has_tried=tried,
        has_channel=ChannelBinding.objects.for_tenant(tenant).exists(),
        has_teammate=Membership.objects.for_tenant(tenant).count() > 1,
    )
