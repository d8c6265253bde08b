"""The action protocol the model answers with: respond, escalate, and one action per tool the
agent enabled (built-in or the tenant's HTTP tools), as one constrained JSON schema."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ai_agents.models import Agent, HttpTool
from ai_agents.rules.options import OPTIONS_FIELD
from ai_agents.tools import builtin  # noqa: F401  (registers the built-in tools)
from ai_agents.tools.registry import ToolSpec, registry
from erp.llm.actions import ActionSpec, build_action_schema

logger = logging.getLogger(__name__)

ACTIONS = (
    ActionSpec("respond", "responder al cliente con `answer`"),
    ActionSpec(
        "escalate",
        "pasar la conversación a una persona (el cliente lo pide o no puedes ayudar)",
        {"type": "object", "properties": {"reason": {"type": "string"}}},
    ),
)
COMMON_FIELDS: dict[str, dict[str, Any]] = {
    "answer": {"type": "string", "description": "el texto para el cliente"},
    "intent": {"type": "string", "description": "la intención detectada del cliente"},
    "sentiment": {"type": "number", "description": "sentimiento del cliente, de -1 a 1"},
    "confidence": {"type": "number", "description": "tu confianza en la respuesta, de 0 a 1"},
    # The reply's `outcome: no_answer` (ai_agents/conversations/no_answer.py).
    "no_answer": {
        "type": "boolean",
        "description": "true si la información disponible no responde la pregunta",
    },
    # Choices the customer can pick (ai_agents/rules/options.py; buttons, chips, a list).
    "options": OPTIONS_FIELD,
}
ACTION_SCHEMA = build_action_schema(ACTIONS, COMMON_FIELDS)


@dataclass(frozen=True)
class ActionSet:
    actions: tuple[ActionSpec, ...]
    schema: dict[str, Any]
    tool_names: frozenset[str]
    http_tools: Mapping[str, Any] = field(default_factory=dict)  # name -> HttpTool


BASE_ACTIONS = ActionSet(ACTIONS, ACTION_SCHEMA, frozenset())


def actions_for(agent: Agent) -> ActionSet:
    """respond, escalate and one action per enabled tool. A tool whose argument names clash
    with another's (different schema) is left out, with a warning."""
    enabled = list(agent.tools_enabled or [])
    if not enabled:
        return BASE_ACTIONS
    actions = list(ACTIONS)
    names: set[str] = set()
    http_tools = {
        tool.name: tool
        for tool in HttpTool.objects.for_tenant(agent.tenant_id).filter(
            is_active=True, name__in=enabled
        )
    }
    specs: list[ToolSpec | ActionSpec] = [
        *registry.specs_for(enabled),
        *(
            ActionSpec(t.name, t.description, t.args_schema or {})
            for t in http_tools.values()
            if registry.get(t.name) is None
        ),
    ]
    for spec in specs:
        candidate = ActionSpec(spec.name, spec.description, spec.args_schema)
        try:
            build_action_schema([*actions, candidate], COMMON_FIELDS)
        except ValueError as exc:
            logger.warning("pipeline.tool_skipped", extra={"tool": spec.name, "error": str(exc)})
            continue
        actions.append(candidate)
        names.add(spec.name)
    if not names:
        return BASE_ACTIONS
    return ActionSet(
        tuple(actions),
        build_action_schema(actions, COMMON_FIELDS),
        frozenset(names),
        {name: tool for name, tool in http_tools.items() if name in names},
    )
