"""The system prompt of one turn, with what the spec's context calls `session`: the
conversation's id, when it started and the intents detected so far (read with the history in
phase 1's round trip, `store.turn_next`)."""

from __future__ import annotations

from ai_agents.conversations.context import system_prompt
from ai_agents.conversations.turn import Turn


def turn_system_prompt(turn: Turn) -> str:
    return system_prompt(
        agent=turn.agent,
        conversation=turn.conversation,
        contact=turn.contact,
        previous_intents=turn.previous_intents,
    )
