"""The database-facing steps of the message pipeline: receive, context, retrieve, llm, store.

Each step is a small function; `ai_agents.pipeline.run` chains them and times each one.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from ai_agents.models import Agent, Contact, Conversation, KnowledgeBase, Message
from ai_agents.pipeline import seams
from ai_agents.pipeline.prompt import format_spanish_datetime
from ai_agents.selectors.knowledge import (
    SearchHit,
    agent_knowledge_bases,
    agent_knowledge_bases_statement,
    knowledge_bases_search,
)
from ai_agents.services.conversations import conversation_expire_if_idle
from erp.llm.actions import (
    ActionSpec,
    ParsedAction,
    answer_deltas,
    build_action_schema,
    parse_action,
)
from erp.llm.errors import Unavailable
from erp.llm.gateway import CallContext, RetryPolicy, get_provider, llm_generate, llm_stream
from erp.llm.types import LlmRequest, LlmResult, Passage
from erp.llm.types import Message as LlmMessage
from erp.tenancy import rows

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
    from ai_agents.models import HttpTool
    from ai_agents.tools import builtin  # noqa: F401  (registers the built-in tools)
    from ai_agents.tools.registry import registry

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


# --- receive ------------------------------------------------------------------------------


def _contact_statement(tenant_id: int, external_id: str) -> rows.Statement:
    return rows.select_statement(
        Contact, tenant_id=tenant_id, where="external_id = %s", params=[external_id]
    )


def _contact_settle(tenant: Any, data: Mapping[str, Any], found: Contact | None) -> Contact:
    """`found` (the contact read), created when missing, its given fields updated if changed."""
    changes = {k: data[k] for k in ("name", "email", "phone") if data.get(k)}
    if found is None:
        contact, created = Contact.objects.for_tenant(tenant).get_or_create(
            tenant=tenant, external_id=str(data["external_id"]), defaults=changes
        )
    else:
        contact, created = found, False
    if not created and any(getattr(contact, k) != v for k, v in changes.items()):
        for key, value in changes.items():
            setattr(contact, key, value)
        contact.save(update_fields=[*changes, "updated_at"])
    return contact


def contact_upsert(*, tenant: Any, data: Mapping[str, Any]) -> Contact:
    """The tenant's contact with this external id (created, or its given fields updated)."""
    (outcome,) = rows.run_together([_contact_statement(tenant.pk, str(data["external_id"]))])
    found = rows.first(Contact, outcome)
    return _contact_settle(tenant, data, found)


def thread_key(*, agent_id: Any, channel: str, thread_id: str) -> str:
    """The name of a contact thread's advisory lock (hashed to a bigint by PostgreSQL)."""
    return f"{agent_id}:{channel}:{thread_id}"


def _lock_statement(*, agent_id: Any, channel: str, thread_id: str) -> rows.Statement:
    return "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [
        thread_key(agent_id=agent_id, channel=channel, thread_id=thread_id)
    ]


# A bigint advisory lock shows in pg_locks as its high half (classid) and low half (objid),
# with objsubid 1.
_LOCKED_THREADS = """
SELECT k FROM unnest(%s::text[]) AS k
WHERE hashtextextended(k, 0) IN (
    SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks
    WHERE locktype = 'advisory' AND objsubid = 1 AND granted
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
)
"""


def threads_being_answered(keys: Sequence[str]) -> set[str]:
    """Of these `thread_key`s, those whose lock a transaction holds right now: a message of
    the thread is being answered. Reads pg_locks; takes no lock itself."""
    if not keys:
        return set()
    (outcome,) = rows.run_together([(_LOCKED_THREADS, [list(keys)])])
    return {row[0] for row in outcome.rows or []}


def thread_lock(*, agent_id: Any, channel: str, thread_id: str) -> None:
    """Inside a transaction: waits for, then holds until the transaction ends, the lock of one
    contact thread. Messages of one conversation are processed one at a time, in arrival order
    (PostgreSQL grants waiters in order), different conversations in parallel.

    An advisory lock, not a row lock: staff claiming or closing the conversation meanwhile never
    wait for the model; the run re-checks the conversation before it stores its reply."""
    rows.run_together([_lock_statement(agent_id=agent_id, channel=channel, thread_id=thread_id)])


def _open_conversation_where(agent: Agent, channel: str, thread_id: str) -> rows.Statement:
    # At most one open conversation per thread (partial unique constraint).
    return (
        "agent_id = %s AND channel = %s AND channel_conversation_id = %s AND status = ANY(%s)",
        [agent.pk, channel, thread_id, list(Conversation.OPEN_STATUSES)],
    )


def _conversation_statement(agent: Agent, channel: str, thread_id: str) -> rows.Statement:
    where, params = _open_conversation_where(agent, channel, thread_id)
    return rows.select_statement(
        Conversation, tenant_id=agent.tenant_id, where=where, params=params
    )


def conversation_open(
    *,
    agent: Agent,
    channel: str,
    thread_id: str,
    contact: Contact | None,
    binding: Any = None,
    found: Conversation | None = None,
) -> Conversation:
    """The open (active or escalated) conversation of this thread (`found`, when the caller
    read it already), or a new one. A closed or expired conversation is never reused;
    concurrent first messages share one conversation (partial unique constraint: the loser
    reads the winner's row)."""
    if found is not None and not conversation_expire_if_idle(found):
        return found
    for _attempt in range(3):
        (outcome,) = rows.run_together([_conversation_statement(agent, channel, thread_id)])
        existing = rows.first(Conversation, outcome)
        if existing is not None and not conversation_expire_if_idle(existing):
            return existing
        try:
            with transaction.atomic():
                return Conversation.objects.for_tenant(agent.tenant_id).create(
                    tenant_id=agent.tenant_id,
                    agent=agent,
                    channel=channel,
                    channel_conversation_id=thread_id,
                    contact=contact,
                    contact_identifier=contact.external_id if contact else thread_id,
                    binding=binding,
                )
        except IntegrityError:
            continue  # another request created it first
    raise RuntimeError("conversation_open: could not find or create")  # pragma: no cover


@dataclass
class Thread:
    """What `thread_open` read under the thread's lock."""

    conversation: Conversation
    contact: Contact
    history_found: list[tuple[Any, str, str]]  # (id, role, content), newest first
    knowledge_bases: list[Any]


def thread_open(
    *,
    agent: Agent,
    channel: str,
    thread_id: str,
    contact_data: Mapping[str, Any],
    binding: Any = None,
) -> Thread:
    """Inside a transaction, in ONE round trip for a known contact and conversation: the
    thread's lock (see `thread_lock`), then, read after it, the open conversation, the contact,
    the conversation's latest messages (see `history_load`) and the agent's knowledge bases.
    A new contact or conversation (a thread's first message) is created after."""
    conversation_where, conversation_params = _open_conversation_where(agent, channel, thread_id)
    history_sql, history_params = _history_statement(
        tenant_id=agent.tenant_id,
        conversation_sql=(
            "(SELECT id FROM ai_agents_conversation WHERE tenant_id = %s AND "  # noqa: S608
            f"{conversation_where})"
        ),
        conversation_params=[agent.tenant_id, *conversation_params],
        limit=history_limit(agent.history),
        with_first=agent.history["truncation_strategy"] == "smart",
        max_chars=seams.input_max_chars(channel),
    )
    _lock, conversation, contact, history, kbs = rows.run_together(
        [
            _lock_statement(agent_id=agent.pk, channel=channel, thread_id=thread_id),
            _conversation_statement(agent, channel, thread_id),
            _contact_statement(agent.tenant_id, str(contact_data["external_id"])),
            (history_sql, history_params),
            agent_knowledge_bases_statement(agent=agent),
        ]
    )
    found_contact = rows.first(Contact, contact)
    settled_contact = _contact_settle(agent.tenant, contact_data, found_contact)
    found = rows.first(Conversation, conversation)
    opened = conversation_open(
        agent=agent,
        channel=channel,
        thread_id=thread_id,
        contact=settled_contact,
        binding=binding,
        found=found,
    )
    return Thread(
        conversation=opened,
        contact=settled_contact,
        # The history read belongs to `found`; a conversation opened instead (the first, or
        # one replacing an expired `found`) has none.
        history_found=list(history.rows or []) if opened is found else [],
        knowledge_bases=rows.instances(KnowledgeBase, kbs),
    )


def message_by_channel_id(*, agent: Agent, channel_message_id: str) -> Message | None:
    return (
        Message.objects.for_tenant(agent.tenant_id)
        .filter(agent=agent, channel_message_id=channel_message_id)
        .first()
    )


# --- context ------------------------------------------------------------------------------


def history_limit(config: Mapping[str, Any]) -> int:
    """How many of the latest messages are read for the history (truncation picks from them)."""
    return max(int(config["max_messages"]) * 3, 20)


def _history_statement(
    *,
    tenant_id: int,
    conversation_sql: str,
    conversation_params: list[Any],
    limit: int,
    before: Any = None,
    with_first: bool = False,
    max_chars: int,
) -> rows.Statement:
    """The latest `limit` messages, newest first; `with_first` (the `smart` strategy keeps the
    conversation's first message) adds the very first when it is older than those. Each text
    is cut to `max_chars` by PostgreSQL (a huge earlier message never reaches the prompt)."""
    where = (
        f"tenant_id = %s AND conversation_id = {conversation_sql} AND role IN ('user', 'assistant')"
    )
    where_params: list[Any] = [tenant_id, *conversation_params]
    if before is not None:
        # Replies given since count; later customer messages (answered after this one) do not.
        where += " AND (role = 'assistant' OR created_at < %s)"
        where_params.append(before)
    select = f"SELECT id, role, content, created_at FROM ai_agents_message WHERE {where}"  # noqa: S608
    sql, params = f"{select} ORDER BY created_at DESC LIMIT %s", [*where_params, limit]
    if with_first:
        sql = f"({sql}) UNION ({select} ORDER BY created_at LIMIT 1)"
        params += where_params
    return (
        f"SELECT id, role, left(content, %s) FROM ({sql}) h ORDER BY created_at DESC",  # noqa: S608
        [max_chars, *params],
    )


def history_load(
    *,
    conversation: Conversation,
    config: Mapping[str, Any],
    before: Any = None,
    found: list[tuple[Any, str, str]] | None = None,
) -> tuple[list[seams.Turn], list[str]]:
    """Earlier user/assistant messages (before `before`, when the message being answered is
    already stored) truncated per the agent's history config, and the earlier user texts
    (oldest first, for loop detection); one query, none when `thread_open` read them
    (`found`). With `summarize` and `smart`, once the conversation has `summarize_after`
    messages, the conversation's cached summary of the cut middle is the summary item while
    it still covers cut messages; a summary is enqueued for
    after the reply when there is none, and a refresh when enough newer messages are cut
    (ai_agents/services/history_summary.py)."""
    from ai_agents.services.history_summary import (
        history_summary_schedule,
        summary_stale,
        summary_usable,
    )

    if found is None:
        (outcome,) = rows.run_together(
            [
                _history_statement(
                    tenant_id=conversation.tenant_id,
                    conversation_sql="%s",
                    conversation_params=[conversation.pk],
                    limit=history_limit(config),
                    before=before,
                    with_first=config["truncation_strategy"] == "smart",
                    max_chars=seams.input_max_chars(conversation.channel),
                )
            ]
        )
        found = list(outcome.rows or [])
    turns = [seams.Turn(role=r, content=c, message_id=str(i)) for i, r, c in reversed(found)]
    recent = [t.content for t in turns if t.role == "user"]
    options = {
        "strategy": str(config["truncation_strategy"]),
        "max_messages": int(config["max_messages"]),
        "token_budget": int(config["max_tokens"]),
    }
    result = seams.truncate_history(turns, **options)
    if not result.needs_summary_of:
        return list(result.items), recent
    if conversation.message_count < int(config["summarize_after"]):
        return list(result.items), recent  # too short to summarize yet: the middle is left out
    cut_ids = [str(t.message_id) for t in result.needs_summary_of]
    summary = summary_usable(conversation.history_summary, cut_ids)
    if summary is not None:
        result = seams.truncate_history(turns, **options, summary=summary)
    if summary is None or summary_stale(conversation.history_summary, cut_ids):
        history_summary_schedule(conversation_id=conversation.pk, upto_message_id=cut_ids[-1])
    return list(result.items), recent


def system_prompt(*, agent: Agent, conversation: Conversation, contact: Contact | None) -> str:
    """The agent's prompt (placeholders filled), then the context block: what the model knows
    of the moment, the business and the customer whether or not the prompt names it."""
    tenant = agent.tenant
    now = timezone.localtime(timezone.now(), _zone(tenant.timezone))
    variables = conversation.session_variables or {}
    prompt = seams.render_system_prompt(
        agent.system_prompt,
        company_name=tenant.name,
        agent_name=agent.name,
        customer_name=(contact.name if contact else "") or "",
        now=now,
        session_variables=variables,
    )
    return (
        prompt
        + "\n\n"
        + context_block(
            now=now,
            company=tenant.name,
            agent_name=agent.name,
            contact=contact,
            variables=variables,
        )
    )


# A customer's attributes and session variables go into every prompt: kept short.
CONTEXT_VALUE_MAX_CHARS = 600


def context_block(
    *,
    now: datetime,
    company: str,
    agent_name: str,
    contact: Contact | None,
    variables: Mapping[str, Any],
) -> str:
    labels = _context_labels(get_language())
    lines = [
        labels["title"],
        labels["now"] % {"now": format_spanish_datetime(now)},
        labels["company"] % {"company": company, "agent": agent_name},
    ]
    if contact is not None:
        known = [
            (labels[field], value)
            for field, value in (
                ("name", contact.name),
                ("email", contact.email),
                ("phone", contact.phone),
            )
            if value
        ]
        if known or contact.custom_attributes:
            described = ", ".join(f"{label}: {value}" for label, value in known)
            if contact.custom_attributes:
                attributes = _compact(contact.custom_attributes)
                described += ("; " if described else "") + labels["data"] % {"a": attributes}
            lines.append(labels["customer"] % {"c": described})
    if variables:
        lines.append(labels["variables"] % {"v": _compact(variables)})
    return "\n".join(lines)


@functools.lru_cache(maxsize=16)
def _context_labels(language: str | None) -> dict[str, str]:
    """The context block's labels in `language` (the active one: the cache key)."""
    return {
        "title": _("## Contexto:"),
        "now": _("- Fecha y hora: %(now)s"),
        "company": _("- Empresa: %(company)s; agente: %(agent)s"),
        "name": _("nombre"),
        "email": _("correo"),
        "phone": _("teléfono"),
        "data": _("datos: %(a)s"),
        "customer": _("- Cliente: %(c)s"),
        "variables": _("- Variables de la conversación: %(v)s"),
    }


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    return text if len(text) <= CONTEXT_VALUE_MAX_CHARS else text[:CONTEXT_VALUE_MAX_CHARS] + "…"


def _zone(name: str) -> Any:
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


# --- retrieve -----------------------------------------------------------------------------


@dataclass
class Retrieval:
    hits: list[SearchHit] = field(default_factory=list)
    elapsed_ms: int = 0
    timed_out: bool = False


# Agent id -> the embedding spaces of its knowledge bases at its last retrieval in this process.
_agent_spaces: dict[Any, frozenset[str]] = {}


def retrieval_prefetch(*, agent: Agent, text: str) -> None:
    """Starts the query's local embedding as the message arrives, when the agent's knowledge
    bases (as last seen here) use the local model: ~25 ms of CPU that then overlaps the
    receive steps. A guess from the last retrieval only costs a wasted vector when wrong."""
    from ai_agents.knowledge import embeddings
    from ai_agents.knowledge.spaces import LOCAL_MODEL

    if text.strip() and LOCAL_MODEL in _agent_spaces.get(agent.pk, ()):
        embeddings.query_prefetch(text)


def retrieve(
    *,
    agent: Agent,
    query: str,
    processing: Mapping[str, Any],
    knowledge_bases: list[Any] | None = None,
    usage: CallContext | None = None,
) -> Retrieval:
    """The best chunks of the agent's knowledge bases (`knowledge_bases`, when `thread_open`
    read them), bounded by `rag_timeout_ms` (a statement timeout inside a savepoint: a slow
    search is dropped and the answer goes on without it). One round trip for the search (see
    `knowledge_bases_search`); the query embedding is cached per process."""
    kbs = agent_knowledge_bases(agent=agent) if knowledge_bases is None else knowledge_bases
    _agent_spaces[agent.pk] = frozenset(kb.embedding_space for kb in kbs)
    if not kbs:
        return Retrieval()
    started = time.monotonic()
    try:
        hits = knowledge_bases_search(
            tenant=agent.tenant,
            kbs=kbs,
            query=query,
            k=int(processing["rag_top_k"]),
            min_score=float(processing["rag_min_score"]) or None,
            timeout_ms=int(processing["rag_timeout_ms"]),
            usage=usage,
        )
    except DatabaseError as exc:
        logger.warning("pipeline.rag_failed", extra={"error": type(exc).__name__})
        return Retrieval(elapsed_ms=_ms(started), timed_out=True)
    return Retrieval(hits=hits, elapsed_ms=_ms(started))


def citations(hits: list[SearchHit]) -> list[dict[str, Any]]:
    return [
        {
            "chunk_id": str(h.chunk_id),
            "document_id": str(h.document_id),
            "title": h.document_title,
            "heading_path": list(h.heading_path),
            "score": h.score,
        }
        for h in hits
    ]


# --- llm ----------------------------------------------------------------------------------


def retry_policy(processing: Mapping[str, Any], *, remaining_s: float) -> RetryPolicy:
    return RetryPolicy(
        timeout_s=int(processing["llm_timeout_ms"]) / 1000,
        attempts=int(processing["llm_max_retries"]) + 1,
        base_delay_s=int(processing["llm_retry_delay_ms"]) / 1000,
        factor=float(processing["llm_retry_backoff"]),
        deadline_s=max(remaining_s, 0.0),
    )


def build_request(
    *,
    agent: Agent,
    system: str,
    history: list[seams.Turn],
    text: str,
    hits: list[SearchHit],
    processing: Mapping[str, Any],
    actions: ActionSet = BASE_ACTIONS,
    exchange: Sequence[LlmMessage] = (),
    rules: seams.Rules | None = None,
) -> LlmRequest:
    """`exchange`: this message's tool rounds so far (the model's action, the tool's result)."""
    parts = [system]
    # The summary of the history cut out of the prompt (a system item) goes with the system
    # text: providers take system text apart from the turns.
    parts.extend(t.content for t in history if t.role == "system")
    if hits:
        formatted = "\n\n".join(
            f"[{i}] {h.document_title}\n{h.content}" for i, h in enumerate(hits, start=1)
        )
        parts.append(_("## Información Relevante:") + "\n" + formatted)
    intents = seams.intent_prompt(rules or seams.rules_for(agent))
    if intents:
        parts.append(intents)
    tools = [a for a in actions.actions if a.name in actions.tool_names]
    if tools:
        parts.append(
            _("## Herramientas Disponibles:")
            + "\n"
            + "\n".join(f"- {a.name}: {a.description}" for a in tools)
        )
    parts.append(
        _(
            "Responde con un objeto JSON: action (respond, escalate o una herramienta), answer "
            "(tu respuesta), intent, sentiment (-1 a 1) y confidence (0 a 1)."
        )
    )
    messages = [
        LlmMessage(role="assistant" if t.role == "assistant" else "user", content=t.content)
        for t in history
        if t.role in ("user", "assistant")
    ]
    messages.append(LlmMessage(role="user", content=text))
    messages.extend(exchange)
    return LlmRequest(
        messages=messages,
        system="\n\n".join(parts),
        json_schema=actions.schema,
        temperature=agent.temperature,
        max_output_tokens=agent.max_output_tokens,
        timeout_s=int(processing["llm_timeout_ms"]) / 1000,
        model=agent.model or None,
        passages=[Passage(text=h.content, source=h.document_title) for h in hits],
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
    from ai_agents.tools.registry import registry
    from erp.llm.usage import usage_record

    args = {k: v for k, v in parsed.args.items() if v is not None}
    http_tool = actions.http_tools.get(parsed.name)
    if http_tool is not None:
        from ai_agents.tools.http_tool import execute_http_tool

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


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
