"""Built-in tools. Handlers receive the conversation's own `tenant`, `agent`, `conversation`
and `contact` from the pipeline and act only on them, whatever the model put in the arguments.

- `knowledge_search` {query}: the agent's knowledge bases (the same search as RAG)
- `contact_get` {}: the contact's name, email, phone and attributes
- `contact_update` {name?, email?, phone?}: updates the contact
- `session_variable_set` {variable, value}: stores a session variable of the conversation
(Escalating to a human is the `escalate` action every agent has.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext as _

from ai_agents.selectors.knowledge import agent_knowledge_bases, knowledge_bases_search
from ai_agents.tools.names import (
    CONTACT_GET,
    CONTACT_UPDATE,
    KNOWLEDGE_SEARCH,
    SESSION_VARIABLE_SET,
)
from ai_agents.tools.registry import ToolRegistry, ToolResult, ToolSpec, registry

MAX_SESSION_VARIABLES = 50


def _knowledge_search(
    args: dict[str, Any],
    *,
    agent: Any,
    processing: Mapping[str, Any] | None = None,
    usage: Any = None,
    tool_timeout_ms: int | None = None,
    **_ctx: Any,
) -> ToolResult:
    """The same search as RAG, with the agent's `rag_top_k`, `rag_min_score` and the smaller of
    `rag_timeout_ms` and `tool_timeout_ms`; `data` holds the hits (the pipeline cites them)."""
    processing = processing or {}
    budgets = [int(v) for v in (processing.get("rag_timeout_ms"), tool_timeout_ms) if v]
    hits = knowledge_bases_search(
        tenant=agent.tenant,
        kbs=agent_knowledge_bases(agent=agent),
        query=args["query"],
        k=int(processing.get("rag_top_k") or 5),
        min_score=float(processing.get("rag_min_score") or 0) or None,
        timeout_ms=min(budgets) if budgets else None,
        usage=usage,
    )
    content = "\n\n".join(f"[{h.document_title}] {h.content}" for h in hits)
    return ToolResult(ok=True, content=content or _("Sin resultados."), data=hits)


def _contact_get(args: dict[str, Any], *, contact: Any, **_ctx: Any) -> ToolResult:
    data = {
        "name": contact.name,
        "email": contact.email,
        "phone": contact.phone,
        "attributes": contact.custom_attributes,
    }
    return ToolResult(ok=True, content=json.dumps(data, ensure_ascii=False), data=data)


def _contact_update(args: dict[str, Any], *, contact: Any, **_ctx: Any) -> ToolResult:
    changes = {k: str(args[k]).strip() for k in ("name", "email", "phone") if k in args}
    if changes.get("email"):
        try:
            validate_email(changes["email"])
        except ValidationError:
            return ToolResult(ok=False, error=_("Correo no válido."))
    for key, value in changes.items():
        setattr(contact, key, value)
    if changes:
        contact.save(update_fields=[*changes, "updated_at"])
    return ToolResult(ok=True, content=_("Contacto actualizado."), data=changes)


def _session_variable_set(args: dict[str, Any], *, conversation: Any, **_ctx: Any) -> ToolResult:
    variables = dict(conversation.session_variables or {})
    if args["variable"] not in variables and len(variables) >= MAX_SESSION_VARIABLES:
        return ToolResult(ok=False, error=_("Demasiadas variables de sesión."))
    variables[args["variable"]] = args["value"]
    conversation.session_variables = variables
    type(conversation).objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk).update(
        session_variables=variables
    )
    return ToolResult(ok=True, content=_("Guardado."), data={args["variable"]: args["value"]})


def register_builtin_tools(target: ToolRegistry) -> None:
    string = {"type": "string", "maxLength": 500}
    tools: list[tuple[ToolSpec, Callable[..., ToolResult]]] = [
        (
            ToolSpec(
                KNOWLEDGE_SEARCH,
                "buscar en la documentación de la empresa",
                {"type": "object", "properties": {"query": string}, "required": ["query"]},
            ),
            _knowledge_search,
        ),
        (ToolSpec(CONTACT_GET, "ver los datos del cliente"), _contact_get),
        (
            ToolSpec(
                CONTACT_UPDATE,
                "actualizar nombre, correo o teléfono del cliente",
                {
                    "type": "object",
                    "properties": {"name": string, "email": string, "phone": string},
                },
            ),
            _contact_update,
        ),
        (
            ToolSpec(
                SESSION_VARIABLE_SET,
                "guardar un dato de la conversación (variable, value)",
                {
                    "type": "object",
                    "properties": {
                        "variable": {"type": "string", "maxLength": 50},
                        "value": string,
                    },
                    "required": ["variable", "value"],
                },
            ),
            _session_variable_set,
        ),
    ]
    for spec, handler in tools:
        if target.get(spec.name) is None:
            target.register(spec, handler)


register_builtin_tools(registry)
