"""The models validate tool names against `ai_agents.tools.names`, not the registry: both must
list the same built-in tools, in the same order (the "available" list of the error message)."""

from __future__ import annotations

from ai_agents.tools.builtin import registry
from ai_agents.tools.names import BUILTIN_TOOL_NAMES, RESERVED_NAMES


def test_the_registry_holds_exactly_the_named_builtin_tools() -> None:
    assert tuple(registry.names()) == BUILTIN_TOOL_NAMES


def test_no_builtin_tool_takes_a_reserved_name() -> None:
    assert RESERVED_NAMES.isdisjoint(BUILTIN_TOOL_NAMES)
