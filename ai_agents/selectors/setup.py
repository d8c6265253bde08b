"""Reads for the start page's checklist: what a tenant has set up so far, from its own rows."""

from __future__ import annotations

from dataclasses import dataclass

from ai_agents.models import Agent, ChannelBinding, Conversation, Document, KnowledgeBase
from erp.llm.models import Operation, UsageLog
from erp.tenancy.models import Membership, Tenant


@dataclass(frozen=True)
class SetupProgress:
    tenant: Tenant
    agent_id: str | None  # the first agent: where "try it" leads (its playground)
    has_documents: bool
    knowledge_base_id: str | None  # where "add documents" leads when a base exists
    has_tried: bool
    has_channel: bool
    has_teammate: bool

    @property
    def has_agent(self) -> bool:
        return self.agent_id is not None


def setup_progress(*, tenant: Tenant) -> SetupProgress:
    kb = KnowledgeBase.objects.for_tenant(tenant).order_by("created_at").values("pk").first()
    tried = (
        Conversation.objects.for_tenant(tenant).exists()
        or UsageLog.objects.for_tenant(tenant).filter(operation=Operation.PLAYGROUND).exists()
    )
    agent = Agent.objects.for_tenant(tenant).order_by("created_at").values("pk").first()
    return SetupProgress(
        tenant=tenant,
        agent_id=str(agent["pk"]) if agent else None,
        has_documents=Document.objects.for_tenant(tenant).exists(),
        knowledge_base_id=str(kb["pk"]) if kb else None,
        has_tried=tried,
        has_channel=ChannelBinding.objects.for_tenant(tenant).exists(),
        has_teammate=Membership.objects.for_tenant(tenant).count() > 1,
    )
