"""The model side of a turn: the action protocol (respond, escalate, one action per tool), the
model call through the gateway and the tools the model chooses."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ai_agents.conversations.retrieval import Retrieval
from ai_agents.models import Agent, Contact, Conversation, HttpTool
from ai_agents.rules.escalation import failure_decision
from ai_agents.selectors.knowledge import SearchHit
from ai_agents.tools import builtin  # noqa: F401  (registers the built-in tools)
from ai_agents.tools.http_tool import execute_http_tool
from ai_agents.tools.registry import registry
from erp.llm.actions import (
    ActionSpec,
    ParsedAction,
    answer_deltas,
    build_action_schema,
    parse_action,
)
from erp.llm.errors import LlmError, NoCredits, Timeout, Unavailable
from erp.llm.gateway import CallContext, RetryPolicy, get_provider, llm_generate, llm_stream
from erp.llm.types import LlmRequest, LlmResult
from erp.llm.types import Message as LlmMessage
from erp.llm.usage import usage_record

if TYPE_CHECKING:  # annotations only
    from ai_agents.conversations.turn import Turn

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
    specs = [
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


def retry_policy(processing: Mapping[str, Any], *, remaining_s: float) -> RetryPolicy:
    return RetryPolicy(
        timeout_s=int(processing["llm_timeout_ms"]) / 1000,
        attempts=int(processing["llm_max_retries"]) + 1,
        base_delay_s=int(processing["llm_retry_delay_ms"]) / 1000,
        factor=float(processing["llm_retry_backoff"]),
        deadline_s=max(remaining_s, 0.0),
    )


def llm_call(
    *,
    agent: Agent,
    request: LlmRequest,
    context: CallContext,
    retry: RetryPolicy,
    on_delta: Callable[[str], None] | None = None,
    actions: ActionSet = BASE_ACTIONS,
) -> tuple[LlmResult, ParsedAction]:
    """One model call through the gateway. With `on_delta` the call streams and the
    characters of the `answer` field are passed to it as they arrive."""
    provider = None if agent.provider == Agent.Provider.DEFAULT else get_provider(agent.provider)
    if on_delta is None:
        result = llm_generate(request, context=context, provider=provider, retry=retry)
    else:
        final: LlmResult | None = None
        stream = llm_stream(request, context=context, provider=provider, retry=retry)
        for event in answer_deltas(stream):
            if isinstance(event, LlmResult):
                final = event
            else:
                on_delta(event.text)
        if final is None:  # pragma: no cover - the gateway always ends with a result
            raise Unavailable("stream without result")
        result = final
    parsed = parse_action(
        result.parsed if result.parsed is not None else result.text,
        actions.actions,
        common_fields=tuple(COMMON_FIELDS),
    )
    return result, parsed


def _conversation_facts(conversation: Conversation, contact: Contact | None) -> dict[str, str]:
    """What an HTTP tool's `{contact.…}` / `{conversation.id}` stand for: this conversation's."""
    facts = {"conversation.id": str(conversation.pk)}
    if contact is not None:
        facts.update(
            {
                "contact.external_id": contact.external_id or "",
                "contact.phone": contact.phone or "",
                "contact.email": contact.email or "",
                "contact.name": contact.name or "",
            }
        )
    return facts


def tool_run(
    *,
    parsed: ParsedAction,
    agent: Agent,
    conversation: Conversation,
    contact: Contact | None,
    context: CallContext,
    processing: Mapping[str, Any],
    actions: ActionSet = BASE_ACTIONS,
    found: list[SearchHit] | None = None,
) -> dict[str, Any]:
    """Runs the tool the model chose on this conversation's own tenant and contact; records a
    `tool_execution` usage row; returns the `tool_calls` entry. The passages `knowledge_search`
    found are added to `found` (cited with the answer)."""
    args = {k: v for k, v in parsed.args.items() if v is not None}
    http_tool = actions.http_tools.get(parsed.name)
    if http_tool is not None:
        result = execute_http_tool(
            http_tool.config(),
            args,
            tool_timeout_ms=int(processing["tool_timeout_ms"]),
            facts=_conversation_facts(conversation, contact),
        )
    else:
        result = registry.run(
            parsed.name,
            args,
            tenant=agent.tenant,
            agent=agent,
            conversation=conversation,
            contact=contact,
            tool_timeout_ms=int(processing["tool_timeout_ms"]),
            processing=processing,
            usage=context,
        )
        if parsed.name == "knowledge_search" and found is not None and result.ok:
            found.extend(result.data or [])
    usage_record(
        tenant=agent.tenant,
        operation="tool_execution",
        provider="tool",
        model=parsed.name,
        latency_ms=result.duration_ms,
        success=result.ok,
        error_message=result.error or "",
        agent_id=context.agent_id,
        conversation_id=context.conversation_id,
        message_id=context.message_id,
    )
    return {
        "tool": parsed.name,
        "arguments": args,
        "ok": result.ok,
        "result": result.content,
        "error": result.error,
        "duration_ms": result.duration_ms,
    }


def number_field(parsed: ParsedAction, name: str, low: float, high: float) -> float | None:
    value = parsed.fields.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(max(float(value), low), high)


# --- the conversation with the model --------------------------------------------------------

# Builds the model request for the actions offered and the tool rounds so far (the engine's:
# the request needs the turn's context, which this module does not know).
RequestMaker = Callable[[ActionSet, list[LlmMessage]], LlmRequest]


def converse(
    turn: Turn, *, request_for: RequestMaker, usage: CallContext
) -> tuple[LlmResult, ParsedAction] | None:
    """The model, and the tools it chooses, until it answers or escalates; the tool calls go
    to the reply's metadata, the passages knowledge_search found to the turn's retrieval.
    None: the model failed, and the turn carries the fallback (escalated when the agent says
    so, or when the credits ran out)."""
    tool_calls: list[dict[str, Any]] = []
    found: list[SearchHit] = []  # passages knowledge_search gave the model
    try:
        answered = _tool_loop(
            turn, request_for=request_for, usage=usage, tool_calls=tool_calls, found=found
        )
    except LlmError as exc:
        kind = (
            "no_credits"
            if isinstance(exc, NoCredits)
            else "timeout"
            if isinstance(exc, Timeout)
            else "llm_failure"
        )
        turn.meta["error"] = type(exc).__name__
        escalate = kind == "no_credits" or bool(turn.agent.processing["escalate_on_failure"])
        turn.escalation = failure_decision(kind) if escalate else None
        turn.reply_text = turn.agent.fallback_message
        answered = None
    turn.meta["tool_calls"] = tool_calls
    turn.retrieval = _with_found(turn.retrieval, found)
    turn.timer.mark("llm", within=_tools_ms(tool_calls))
    return answered


def _tool_loop(
    turn: Turn,
    *,
    request_for: RequestMaker,
    usage: CallContext,
    tool_calls: list[dict[str, Any]],
    found: list[SearchHit],
) -> tuple[LlmResult, ParsedAction]:
    """Calls the model until it answers or escalates, running each tool it chooses (the last
    allowed call offers only respond / escalate)."""
    agent, processing = turn.agent, turn.agent.processing
    actions = actions_for(agent)
    max_rounds = int(processing["max_tool_rounds"])
    exchange: list[LlmMessage] = []
    while True:
        offered = actions if len(tool_calls) < max_rounds else BASE_ACTIONS
        remaining = int(processing["total_timeout_ms"]) / 1000 - turn.timer.elapsed_s
        result, parsed = llm_call(
            agent=agent,
            request=request_for(offered, exchange),
            context=usage,
            retry=retry_policy(processing, remaining_s=remaining),
            on_delta=turn.on_delta,
            actions=offered,
        )
        turn.spent.add(result)
        if parsed.name not in offered.tool_names:
            return result, parsed
        call = tool_run(
            parsed=parsed,
            agent=agent,
            conversation=turn.conversation,
            contact=turn.contact,
            context=usage,
            processing=processing,
            actions=offered,
            found=found,
        )
        tool_calls.append(call)
        exchange.append(LlmMessage(role="assistant", content=parsed.raw or result.text))
        content = call["result"] if call["ok"] else f"ERROR: {call['error']}"
        exchange.append(LlmMessage(role="tool", content=content, name=parsed.name))


def _tools_ms(tool_calls: list[dict[str, Any]]) -> dict[str, int]:
    return {"tools": sum(int(c["duration_ms"]) for c in tool_calls)} if tool_calls else {}


def _with_found(retrieval: Retrieval, found: list[SearchHit]) -> Retrieval:
    """The retrieval with the passages the knowledge_search tool found (cited, recorded)."""
    if not found:
        return retrieval
    hits = list(retrieval.hits)
    known = {h.chunk_id for h in hits}
    for hit in found:
        if hit.chunk_id not in known:
            known.add(hit.chunk_id)
            hits.append(hit)
    return dataclasses.replace(retrieval, hits=hits)
