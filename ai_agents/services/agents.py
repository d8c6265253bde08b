"""Agent configuration writes. Knowledge bases are checked to belong to the agent's tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from ai_agents.models import Agent, KnowledgeBase
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import acts_for, tenant_scope

EDITABLE = (
    "name",
    "description",
    "system_prompt",
    "provider",
    "model",
    "temperature",
    "max_output_tokens",
    "tools_enabled",
    "history_config",
    "intent_detection",
    "escalation_triggers",
    "processing_config",
    "fallback_message",
    "escalation_message",
    "is_active",
)


def _tenant_kbs(tenant: Tenant, ids: Iterable[Any]) -> list[KnowledgeBase]:
    wanted: list[uuid.UUID] = []
    for value in ids:
        try:
            wanted.append(uuid.UUID(str(value)))
        except ValueError:
            raise ValidationError(
                {"knowledge_bases": [_("Identificador no válido: %(id)s") % {"id": value}]}
            ) from None
    found = list(KnowledgeBase.objects.for_tenant(tenant).filter(pk__in=wanted))
    missing = set(wanted) - {kb.pk for kb in found}
    if missing:
        raise ValidationError(
            {
                "knowledge_bases": [
                    _("Base de conocimiento no encontrada: %(id)s") % {"id": min(missing)}
                ]
            }
        )
    return found


def _link(agent: Agent, kbs: list[KnowledgeBase]) -> None:
    """Sets the agent's knowledge bases (through table: works with or without a tenant scope)."""
    through = Agent.knowledge_bases.through
    through.objects.filter(agent_id=agent.pk).delete()
    through.objects.bulk_create([through(agent_id=agent.pk, knowledgebase_id=kb.pk) for kb in kbs])


def _apply(agent: Agent, data: Mapping[str, Any]) -> None:
    for key in EDITABLE:
        if key in data:
            setattr(agent, key, data[key])
    with tenant_scope(agent.tenant_id):  # full_clean's unique checks query the table
        agent.full_clean(exclude=["tenant", "knowledge_bases"])


@acts_for("tenant")
@transaction.atomic
def agent_create(*, tenant: Tenant, data: Mapping[str, Any]) -> Agent:
    agent = Agent(tenant=tenant)
    _apply(agent, data)
    kbs = _tenant_kbs(tenant, data.get("knowledge_bases") or [])
    agent.save()
    _link(agent, kbs)
    return agent


@acts_for("agent")
@transaction.atomic
def agent_update(*, agent: Agent, data: Mapping[str, Any]) -> Agent:
    _apply(agent, data)
    kbs = _tenant_kbs(agent.tenant, data["knowledge_bases"]) if "knowledge_bases" in data else None
    agent.save()
    if kbs is not None:
        _link(agent, kbs)
    return agent


@acts_for("agent")
def agent_delete(*, agent: Agent) -> None:
    agent.delete()
