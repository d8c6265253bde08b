"""The spec's manual inbox: a channel whose agent is switched off (`Agent.is_active=False`)
still takes messages; they are stored and the conversation waits in the staff inbox for a
person (escalated with reason `agent_inactive`, the team notified once, when it escalates).
The bot says nothing. A person who releases it hands it back to the (still switched off)
agent: the customer's next message puts it in the inbox again."""

from __future__ import annotations

import logging
from typing import Any

from ai_agents.models import Conversation
from ai_agents.rules.escalation import EscalationDecision

logger = logging.getLogger(__name__)

AGENT_INACTIVE_REASON = "agent_inactive"


def manual_inbox_escalation(turn: Any) -> EscalationDecision | None:
    """For a turn the engine will not answer (agent off, or the conversation over): the
    escalation that puts an active conversation of a switched-off agent in the inbox (the
    engine stores it with the message, no reply), else None."""
    agent, conversation = turn.agent, turn.conversation
    if agent.is_active:
        return None
    logger.info(
        "pipeline.agent_inactive",
        extra={"agent_id": str(agent.pk), "conversation_id": str(conversation.pk)},
    )
    if conversation.status != Conversation.Status.ACTIVE:
        return None  # already waiting for a person, or over
    return EscalationDecision(
        reason=AGENT_INACTIVE_REASON,
        priority="medium",
        trigger_type=AGENT_INACTIVE_REASON,
        detail="",
    )
