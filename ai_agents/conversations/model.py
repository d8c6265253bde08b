"""The model side of a turn: the model call through the gateway (the action protocol is in
actions.py), the tools the model chooses and the loop between them."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.utils.translation import gettext_lazy, gettext_noop

from ai_agents.conversations.actions import BASE_ACTIONS, COMMON_FIELDS, ActionSet, actions_for
from ai_agents.conversations.no_answer import note_outcome
from ai_agents.conversations.retrieval import Retrieval
from ai_agents.conversations.turn import Turn
from ai_agents.models import Agent, Contact, Conversation
from ai_agents.rules.detail import detail
from ai_agents.rules.escalation import EscalationDecision, FailureKind, failure_decision
from ai_agents.selectors.knowledge import SearchHit
from ai_agents.tools import builtin  # noqa: F401  (registers the built-in tools)
from ai_agents.tools.http_tool import execute_http_tool
from ai_agents.tools.names import CONTACT_GET, KNOWLEDGE_SEARCH
from ai_agents.tools.registry import registry
from erp.llm.actions import (
    ParsedAction,
    answer_deltas,
    parse_action,
)
from erp.llm.errors import BudgetExhausted, LlmError, NoCredits, Timeout, Unavailable
from erp.llm.gateway import CallContext, RetryPolicy, get_provider, llm_generate, llm_stream
from erp.llm.models import Operation
from erp.llm.types import LlmRequest, LlmResult
from erp.llm.types import Message as LlmMessage
from erp.llm.usage import usage_record

logger = logging.getLogger(__name__)

LLM_REQUEST = Operation.LLM_REQUEST.value
# The playground runs only the tools that read: the knowledge search, reading the contact (it
# has none) and GET HTTP tools; the others would change a customer's data or another system
# for a test. The model is told the skipped one was not run, and goes on.
PLAYGROUND_READ_ONLY = frozenset({KNOWLEDGE_SEARCH, CONTACT_GET})
PLAYGROUND_SKIPPED = gettext_lazy(
    "[Prueba: esta herramienta cambia datos y no se ejecutó; continúe como si se hubiera hecho.]"
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
        # A playground run's rows all carry its operation (never counted as a customer's).
        operation="tool_execution" if context.operation == LLM_REQUEST else context.operation,
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
        note_outcome(turn.meta, answered[1])  # `outcome: no_answer` (no_answer.py)
    except BudgetExhausted:
        # "handoff_only": not a failure the customer should read; a person takes over.
        turn.meta["error"] = BudgetExhausted.__name__
        turn.escalation = failure_decision("budget_exhausted")
        turn.reply_text = turn.agent.escalation_message
        answered = None
    except LlmError as exc:
        turn.meta["error"] = type(exc).__name__
        turn.escalation = _after_failure(turn, exc)
        turn.reply_text = turn.agent.fallback_message
        answered = None
    else:
        turn.model_failed = False  # a success: the consecutive failures start again
    turn.meta["tool_calls"] = tool_calls
    turn.retrieval = _with_found(turn.retrieval, found)
    turn.timer.mark("llm", within=_tools_ms(tool_calls))
    return answered


def _after_failure(turn: Turn, exc: LlmError) -> EscalationDecision | None:
    """The fallback goes out; the conversation escalates once the model failed
    `failures_before_escalation` times in a row in it (no credits: at once, nobody else
    can answer). A single transient failure leaves the bot answering the next message."""
    kind: FailureKind = (
        "no_credits"
        if isinstance(exc, NoCredits)
        else "timeout"
        if isinstance(exc, Timeout)
        else "llm_failure"
    )
    turn.model_failed = True
    processing = turn.agent.processing
    failures = int(turn.conversation.model_failures or 0) + 1
    turn.meta["model_failures"] = failures
    if kind == "no_credits":
        return failure_decision(kind)
    if not processing["escalate_on_failure"]:
        return None
    if failures < int(processing["failures_before_escalation"]):
        return None
    decision = failure_decision(kind)
    told = detail(
        gettext_noop("%(detail)s (%(n)s fallos seguidos)"), detail=decision.detail, n=failures
    )
    return dataclasses.replace(decision, detail=told)


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
        if turn.playground and not playground_runs(parsed.name, offered):
            call = _tool_skipped(parsed)
        else:
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


def playground_runs(name: str, actions: ActionSet) -> bool:
    """Whether the playground runs this tool (see PLAYGROUND_READ_ONLY)."""
    http_tool = actions.http_tools.get(name)
    if http_tool is not None:
        return str(http_tool.method).upper() == "GET"
    return name in PLAYGROUND_READ_ONLY


def _tool_skipped(parsed: ParsedAction) -> dict[str, Any]:
    args = {k: v for k, v in parsed.args.items() if v is not None}
    return {
        "tool": parsed.name,
        "arguments": args,
        "ok": True,
        "skipped": True,
        "result": str(PLAYGROUND_SKIPPED),
        "error": None,
        "duration_ms": 0,
    }


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
