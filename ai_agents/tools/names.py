"""The names of the built-in tools, apart from their handlers.

The models check an agent's `tools_enabled` and an HTTP tool's name against these without loading
the handlers, which search the knowledge bases and so import the models back.
`ai_agents.tools.builtin` registers its handlers under exactly these names, in this order.
"""

from __future__ import annotations

KNOWLEDGE_SEARCH = "knowledge_search"
CONTACT_GET = "contact_get"
CONTACT_UPDATE = "contact_update"
SESSION_VARIABLE_SET = "session_variable_set"

BUILTIN_TOOL_NAMES: tuple[str, ...] = (
    KNOWLEDGE_SEARCH,
    CONTACT_GET,
    CONTACT_UPDATE,
    SESSION_VARIABLE_SET,
)

# The keywords of the model's action protocol: a tool named like one would be ambiguous.
RESERVED_NAMES = frozenset({"respond", "escalate", "action"})
