"""Shared pieces of the human handoff tests: a recording channel adapter, agents and
conversations in a given state, one conversation per tenant (fixtures `conv_a`, `conv_b`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from ai_agents.channels import adapter_installed
from ai_agents.models import Agent, ChannelBinding, Contact, Conversation, Message
from ai_agents.services.agents import agent_create
from erp.tenancy.models import Tenant

CHANNEL = "handofftest"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


class RecordingAdapter:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, *, binding: Any, conversation: Any, message: Any) -> str:
        self.sent.append(message.content)
        return "sent"

    def typing(self, *, binding: Any, conversation: Any, inbound: Any) -> None:
        pass


@pytest.fixture
def adapter() -> Iterator[RecordingAdapter]:
    recording = RecordingAdapter()
    with adapter_installed(CHANNEL, recording):
        yield recording


def agent_for(tenant: Tenant, name: str = "Lucía") -> Agent:
    return agent_create(
        tenant=tenant,
        data={"name": name, "system_prompt": f"Eres {name}.", "processing_config": FAST},
    )


def binding_for(agent: Agent) -> ChannelBinding:
    return ChannelBinding.objects.for_tenant(agent.tenant_id).create(
        tenant_id=agent.tenant_id, agent=agent, type=ChannelBinding.Type.WEBCHAT
    )


def conversation_make(
    agent: Agent,
    *,
    status: str = "escalated",
    channel: str = "api",
    thread: str = "cli-1",
    binding: ChannelBinding | None = None,
    customer_text: str = "Quiero hablar con una persona",
    reason: str = "user_request",
    priority: str = "high",
    escalated_minutes_ago: int = 5,
) -> Conversation:
    """A conversation with one customer message (and the bot's notice when escalated)."""
    now = timezone.now()
    contact = Contact.objects.for_tenant(agent.tenant_id).create(
        tenant_id=agent.tenant_id, external_id=thread, name=f"Cliente {thread}"
    )
    escalated = status == "escalated"
    conversation = Conversation.objects.for_tenant(agent.tenant_id).create(
        tenant_id=agent.tenant_id,
        agent=agent,
        channel=channel,
        channel_conversation_id=thread,
        contact=contact,
        contact_identifier=thread,
        binding=binding,
        status=status,
        escalated_at=now - timedelta(minutes=escalated_minutes_ago) if escalated else None,
        escalation_reason=reason if escalated else "",
        escalation_priority=priority if escalated else "",
        last_inbound_at=now - timedelta(minutes=escalated_minutes_ago),
    )
    messages = Message.objects.for_tenant(agent.tenant_id)
    first = messages.create(
        tenant_id=agent.tenant_id,
        conversation=conversation,
        agent=agent,
        role="user",
        content=customer_text,
        metadata={"result": {}},
        created_at=now - timedelta(minutes=escalated_minutes_ago, seconds=1),
    )
    if escalated:
        messages.create(
            tenant_id=agent.tenant_id,
            conversation=conversation,
            agent=agent,
            role="assistant",
            content="Le paso con una persona.",
            reply_to=first,
            metadata={"escalation_notice": True},
            created_at=now - timedelta(minutes=escalated_minutes_ago),
        )
    return conversation


def fresh(conversation: Conversation) -> Conversation:
    return Conversation.objects.for_tenant(conversation.tenant_id).get(pk=conversation.pk)


@pytest.fixture
def conv_a(owner: Any) -> Conversation:
    """A conversation of the owner's tenant (an agent "Lucía", thread "a1")."""
    return conversation_make(agent_for(owner.tenant), thread="a1")


@pytest.fixture
def conv_b(outsider: Any) -> Conversation:
    """A conversation of the outsider's tenant (thread "b1")."""
    return conversation_make(agent_for(outsider.tenant), thread="b1")
