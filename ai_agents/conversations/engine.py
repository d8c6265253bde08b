"""The message pipeline: one inbound message in, the stored reply and its result out.

    receive (contact, conversation, row lock, idempotency) -> escalated? stay silent
    -> text triggers (keyword, user request) -> context (history, system prompt)
    -> retrieve (knowledge bases, rag_timeout_ms) -> llm (gateway, action protocol)
    -> escalate? (sentiment, intent, confidence, model request; failure -> fallback)
    -> store (reply with per-step timings) -> result

The whole run holds the conversation's row lock, so one conversation's messages run one at
a time; the result is stored on the inbound message, and a repeated `channel_message_id`
returns it without calling the model again.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy

from ai_agents.conversations.context import (
    build_request,
    final_intent,
    history_load,
    keyword_intent,
    rules_for,
    system_prompt,
)
from ai_agents.conversations.inbound import Inbound, inbound_message_row
from ai_agents.conversations.model import (
    BASE_ACTIONS,
    actions_for,
    llm_call,
    number_field,
    retry_policy,
    tool_run,
)
from ai_agents.conversations.retrieval import Retrieval, citations, retrieval_prefetch, retrieve
from ai_agents.conversations.store import Thread, message_by_channel_id, thread_lock, thread_open
from ai_agents.conversations.turn import Spent, Timer
from ai_agents.knowledge.chunking import estimate_tokens
from ai_agents.models import Agent, Contact, Conversation, Message
from ai_agents.rules.escalation import EscalationDecision, evaluate_escalation, failure_decision
from ai_agents.rules.input_bound import input_bound
from ai_agents.selectors.knowledge import SearchHit
from erp import ratelimit
from erp.celery import enqueue
from erp.llm.errors import LlmError, NoCredits, Timeout
from erp.llm.gateway import CallContext
from erp.llm.types import Message as LlmMessage
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

RATE_LIMIT_NOTICE = gettext_lazy(
    "Está enviando mensajes muy rápido. Espere un momento y le respondo."
)
# Told to the model (after the kept part) when a customer message was cut to its channel's limit.
INPUT_CUT_NOTE = gettext_lazy(
    "[Mensaje recortado: tenía %(chars)s caracteres; se muestran los primeros %(kept)s.]"
)


def message_process(
    *, agent: Agent, inbound: Inbound, on_delta: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Runs the pipeline for one message and returns the API result (see CONTRACT.md).

    With `on_delta` the model's answer is streamed to it as it arrives (the stored reply and
    the returned result are the same as without)."""
    timer = Timer()
    retrieval_prefetch(agent=agent, text=input_bound(inbound.text, inbound.channel)[0])
    thread_id = inbound.thread_id or str(inbound.contact["external_id"])
    with (
        tenant_scope(agent.tenant_id),  # the agent's tenant, whoever calls (row security)
        rows.survive_rollback(),
        transaction.atomic(),
        rows.deferred_writes(),
    ):
        thread = thread_open(
            agent=agent,
            channel=inbound.channel,
            thread_id=thread_id,
            contact_data=inbound.contact,
            binding=inbound.binding,
        )
        conversation = thread.conversation
        if inbound.channel_message_id:
            existing = message_by_channel_id(
                agent=agent, channel_message_id=inbound.channel_message_id
            )
            if existing is not None:
                return _stored_result(existing)
        # Inserted with the reply at the end (one INSERT); its id is known now so usage rows
        # can name it.
        user_message = inbound_message_row(agent, conversation, inbound, created_at=timezone.now())
        timer.mark("receive")
        return _run(agent, conversation, thread.contact, user_message, timer, on_delta, thread)


def conversation_load(conversation_id: Any) -> Conversation | None:
    """A conversation with what answering it needs (agent, tenant, contact, binding)."""
    return (
        Conversation.objects.unscoped()
        .select_related("agent__tenant", "contact", "binding")
        .filter(pk=conversation_id)
        .first()
    )


def conversation_answer_pending(
    *,
    conversation_id: Any = None,
    conversation: Conversation | None = None,
    on_delta: Callable[[str], None] | None = None,
    deadline_s: float | None = None,
) -> list[dict[str, Any]]:
    """Answers the conversation's stored, not yet answered messages one at a time in arrival
    order, under the thread's lock (so concurrent tasks for one conversation queue up and the
    later ones find nothing left). Returns the results, oldest first. Takes the conversation
    as `conversation_load` gives it, or its id.

    `deadline_s`: after the first message, no message is started that could end (its agent's
    total_timeout_ms) more than this many seconds after the call; those stay pending for the
    next run, and the answers given are committed (a task's time limit would roll them back)."""
    started = time.monotonic()
    if conversation is None:
        conversation = conversation_load(conversation_id)
    if conversation is None:
        return []
    agent = conversation.agent
    results: list[dict[str, Any]] = []
    message_budget_s = int(agent.processing["total_timeout_ms"]) / 1000
    with (
        tenant_scope(agent.tenant_id),  # the agent's tenant, whoever calls (row security)
        rows.survive_rollback(),
        transaction.atomic(),
        rows.deferred_writes(),
    ):
        thread_lock(
            agent_id=agent.pk,
            channel=conversation.channel,
            thread_id=conversation.channel_conversation_id,
        )
        pending = list(
            Message.objects.for_tenant(agent.tenant_id)
            .filter(conversation_id=conversation.pk, role=Message.Role.USER)
            .exclude(metadata__has_key="result")
            .order_by("created_at")
        )
        for user_message in pending:
            if (
                deadline_s is not None
                and results
                and time.monotonic() - started + message_budget_s > deadline_s
            ):
                break  # the rest waits for the next run
            # Read after the lock (and again per message): a person may have claimed or
            # closed it; the previous answer may have escalated it.
            conversation.refresh_from_db(
                fields=["status", "assigned_to", "session_variables", "claim_expires_at"]
            )
            timer = Timer()
            # A closed conversation, or an agent switched off in the admin: stored, unanswered.
            if conversation.status not in Conversation.OPEN_STATUSES or not agent.is_active:
                if not agent.is_active:
                    logger.info(
                        "pipeline.agent_inactive",
                        extra={"agent_id": str(agent.pk), "conversation_id": str(conversation.pk)},
                    )
                results.append(
                    _finish(conversation, user_message, None, None, Retrieval(), {}, timer)
                )
                continue
            timer.mark("receive")
            results.append(
                _run(agent, conversation, conversation.contact, user_message, timer, on_delta)
            )
    return results


def _run(
    agent: Agent,
    conversation: Conversation,
    contact: Contact,
    user_message: Message,
    timer: Timer,
    on_delta: Callable[[str], None] | None = None,
    thread: Thread | None = None,
) -> dict[str, Any]:
    """`thread`: what `thread_open` already read (history, knowledge bases)."""
    processing = agent.processing
    reply_text: str | None
    escalation: EscalationDecision | None = None
    meta: dict[str, Any] = {}
    retrieval = Retrieval()
    result = None

    if conversation.status == Conversation.Status.ESCALATED:
        # A human has it: the message is stored, the bot stays silent, no model call.
        return _finish(conversation, user_message, None, None, retrieval, meta, timer)

    # Everything below works on the message cut to its channel's limit (stored whole).
    text, full_length = input_bound(user_message.content, conversation.channel)
    prompt_text = text
    if full_length is not None:
        meta["input_truncated"] = {"chars": full_length, "kept": len(text)}
        prompt_text = f"{text}\n{INPUT_CUT_NOTE % {'chars': full_length, 'kept': len(text)}}"

    limited = ratelimit.hit(
        f"conv-msgs:{conversation.pk}", limit=int(processing["messages_per_minute"]), window_s=60
    )
    if not limited.allowed:
        # RN-4: stored, no model call, at most one polite notice per window.
        meta["rate_limited"] = {"retry_after_s": limited.retry_after_s}
        notice = None
        if ratelimit.notice_once(f"conv-msgs:{conversation.pk}", limited.retry_after_s):
            notice = str(RATE_LIMIT_NOTICE)
        return _finish(conversation, user_message, notice, None, retrieval, meta, timer)

    rules = rules_for(agent)
    history, recent = history_load(
        conversation=conversation,
        config=agent.history,
        before=None if user_message._state.adding else user_message.created_at,
        found=thread.history_found if thread is not None else None,
    )
    early = keyword_intent(text, rules)
    early_intent = early.intent if early else None
    if early_intent:
        meta["intent_detected"] = early_intent
    escalation = evaluate_escalation(
        rules.triggers,
        text=text,
        sentiment=None,
        intent=early_intent,
        confidence=None,
        recent_user_texts=recent,
        model_requested=False,
        model_reason=None,
    )
    timer.mark("triggers")
    if escalation is not None:
        reply_text = escalation.message or agent.escalation_message
        return _finish(conversation, user_message, reply_text, escalation, retrieval, meta, timer)

    system = system_prompt(agent=agent, conversation=conversation, contact=contact)
    timer.mark("context")
    context = CallContext(
        tenant=agent.tenant,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        message_id=user_message.pk,
    )
    retrieval = retrieve(
        agent=agent,
        query=text,
        processing=processing,
        knowledge_bases=thread.knowledge_bases if thread is not None else None,
        usage=context,
    )
    timer.mark("retrieve")
    estimate = estimate_tokens(system) + sum(estimate_tokens(t.content) for t in history)
    estimate += estimate_tokens(prompt_text)
    estimate += sum(estimate_tokens(h.content) for h in retrieval.hits)
    budget = ratelimit.hit(
        f"tenant-tokens:{agent.tenant_id}",
        limit=int(processing["tokens_per_minute"]),
        window_s=60,
        amount=max(0, estimate),
    )
    if not budget.allowed:
        # The tenant's tokens per minute are spent: stored, no model call, one notice.
        meta["rate_limited"] = {"retry_after_s": budget.retry_after_s, "scope": "tenant_tokens"}
        notice = None
        if ratelimit.notice_once(f"tenant-tokens:{conversation.pk}", budget.retry_after_s):
            notice = str(RATE_LIMIT_NOTICE)
        return _finish(conversation, user_message, notice, None, retrieval, meta, timer)
    actions = actions_for(agent)
    max_rounds = int(processing["max_tool_rounds"])
    exchange: list[LlmMessage] = []
    tool_calls: list[dict[str, Any]] = []
    tool_found: list[SearchHit] = []  # passages knowledge_search gave the model
    spent = Spent()
    try:
        while True:
            # The last allowed call offers only respond / escalate.
            offered = actions if len(tool_calls) < max_rounds else BASE_ACTIONS
            request = build_request(
                agent=agent,
                system=system,
                history=history,
                text=prompt_text,
                hits=retrieval.hits,
                processing=processing,
                actions=offered,
                exchange=exchange,
                rules=rules,
            )
            remaining = int(processing["total_timeout_ms"]) / 1000 - timer.elapsed_s
            result, parsed = llm_call(
                agent=agent,
                request=request,
                context=context,
                retry=retry_policy(processing, remaining_s=remaining),
                on_delta=on_delta,
                actions=offered,
            )
            spent.add(result)
            if parsed.name not in offered.tool_names:
                break
            call = tool_run(
                parsed=parsed,
                agent=agent,
                conversation=conversation,
                contact=contact,
                context=context,
                processing=processing,
                actions=offered,
                found=tool_found,
            )
            tool_calls.append(call)
            exchange.append(LlmMessage(role="assistant", content=parsed.raw or result.text))
            exchange.append(
                LlmMessage(
                    role="tool",
                    content=call["result"] if call["ok"] else f"ERROR: {call['error']}",
                    name=parsed.name,
                )
            )
    except LlmError as exc:
        retrieval = _with_found(retrieval, tool_found)
        timer.mark("llm", within=_tools_ms(tool_calls))
        kind = (
            "no_credits"
            if isinstance(exc, NoCredits)
            else "timeout"
            if isinstance(exc, Timeout)
            else "llm_failure"
        )
        meta["error"] = type(exc).__name__
        meta["tool_calls"] = tool_calls
        escalate = kind == "no_credits" or bool(processing["escalate_on_failure"])
        escalation = failure_decision(kind) if escalate else None
        return _finish(
            conversation,
            user_message,
            agent.fallback_message,
            escalation,
            retrieval,
            meta,
            timer,
            spent,
        )
    meta["tool_calls"] = tool_calls
    retrieval = _with_found(retrieval, tool_found)
    difference = spent.input_tokens + spent.output_tokens - estimate
    if difference:  # the window corrected with real usage
        ratelimit.add(f"tenant-tokens:{agent.tenant_id}", amount=difference, window_s=60)
    timer.mark("llm", within=_tools_ms(tool_calls))
    sentiment = number_field(parsed, "sentiment", -1, 1)
    confidence = number_field(parsed, "confidence", 0, 1)
    llm_intent = parsed.fields.get("intent")
    intent = final_intent(
        text,
        rules,
        keyword=early,
        llm_intent=llm_intent if isinstance(llm_intent, str) else None,
        llm_confidence=confidence,
    )
    meta.update(
        {
            "model_used": result.model,
            "provider": result.provider,
            "intent_detected": intent,
            "sentiment": sentiment,
            "confidence": confidence,
            "action": parsed.name,
            "broken_output": parsed.broken,
        }
    )
    escalation = evaluate_escalation(
        rules.triggers,
        text=text,
        sentiment=sentiment,
        intent=intent,
        confidence=confidence,
        recent_user_texts=recent,
        model_requested=parsed.name == "escalate",
        model_reason=str(parsed.args.get("reason") or "") or None,
    )
    if escalation is not None:
        reply_text = escalation.message or agent.escalation_message
    else:
        reply_text = parsed.answer or agent.fallback_message
        if parsed.broken and parsed.raw.lstrip().startswith("{"):
            reply_text = agent.fallback_message  # never show the customer raw JSON
    return _finish(
        conversation, user_message, reply_text, escalation, retrieval, meta, timer, spent
    )


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


def _finish(
    conversation: Conversation,
    user_message: Message,
    reply_text: str | None,
    escalation: EscalationDecision | None,
    retrieval: Retrieval,
    meta: dict[str, Any],
    timer: Timer,
    spent: Spent | None = None,
) -> dict[str, Any]:
    """Stores the inbound message and the reply (one INSERT), updates the conversation and
    returns the result, which is also kept on the inbound message for repeats."""
    spent = spent or Spent()
    now = timezone.now()
    cites = citations(retrieval.hits) if reply_text and escalation is None else []
    tool_calls = meta.pop("tool_calls", None) or None
    reply: Message | None = None
    if reply_text is not None:
        reply = Message(
            tenant_id=conversation.tenant_id,
            conversation=conversation,
            agent_id=conversation.agent_id,
            role=Message.Role.ASSISTANT,
            content=reply_text,
            input_tokens=spent.input_tokens if spent.calls else None,
            output_tokens=spent.output_tokens if spent.calls else None,
            # The chunks the model was given (also when its answer gave way to an escalation
            # or the fallback); citations only go with an answer.
            rag_chunks_used=[str(h.chunk_id) for h in retrieval.hits]
            if retrieval.hits and (spent.calls or "error" in meta)
            else None,
            rag_search_time_ms=retrieval.elapsed_ms
            if retrieval.hits or retrieval.timed_out
            else None,
            tool_calls=tool_calls,
            reply_to=user_message,
            created_at=max(now, user_message.created_at + timedelta(microseconds=1)),
        )
    body = {
        "conversation_id": str(conversation.pk),
        "message_id": str(user_message.pk),
        "reply": None
        if reply is None
        else {"id": str(reply.pk), "text": reply.content, "citations": cites},
        "conversation_status": Conversation.Status.ESCALATED
        if escalation is not None
        else conversation.status,
        "escalation": None
        if escalation is None
        else {"reason": escalation.reason, "priority": escalation.priority},
        "usage": spent.as_dict(),
    }
    if "rate_limited" in meta:
        body["rate_limited"] = meta["rate_limited"]
    user_message.metadata = {**user_message.metadata, "result": body}
    timer.mark("finish")
    meta["timings_ms"] = {**timer.steps, "total": int(timer.elapsed_s * 1000)}
    meta["response_time_ms"] = meta["timings_ms"]["total"]
    if reply is not None:
        if escalation is not None:
            meta["escalation_notice"] = True  # the one bot message an escalated chat may send
        reply.metadata = meta
    else:  # no reply (a silent conversation, a limit without notice): kept with the message
        user_message.metadata = {**user_message.metadata, "timings_ms": meta["timings_ms"]}
    # A message stored on arrival (channel webhooks) only gets its result; otherwise the
    # inbound message and the reply go in one INSERT. The usage rows of this message's calls
    # (deferred, see `rows.deferred_writes`), the INSERT and the conversation's UPDATE travel
    # in one round trip.
    stored = not user_message._state.adding
    new_rows = [*([] if stored else [user_message]), *([reply] if reply is not None else [])]
    tenant_id = conversation.tenant_id
    statements = rows.take_deferred()
    if stored:
        statements.append(
            rows.update_statement(
                Message,
                tenant_id=tenant_id,
                pk=user_message.pk,
                values={"metadata": user_message.metadata},
            )
        )
    if user_message.channel_message_id and not stored:
        if statements:
            rows.run_together(statements)
        statements = []
        try:
            with transaction.atomic():
                rows.insert(new_rows)
        except IntegrityError:
            # The same channel message was stored meanwhile by another conversation's run
            # (ours is locked): answer with its result; the usage rows stay.
            original = message_by_channel_id(
                agent=conversation.agent, channel_message_id=user_message.channel_message_id
            )
            if original is not None:
                return _stored_result(original)
            raise
    elif new_rows:
        statements.append(rows.insert_statement(new_rows))
    changes: dict[str, Any] = {
        "message_count": rows.Add(len(new_rows)),
        "tokens_used": rows.Add(spent.input_tokens + spent.output_tokens),
        "last_message_at": now,
    }
    if not stored:
        changes["last_inbound_at"] = user_message.created_at
    if escalation is not None:
        changes.update(
            status=Conversation.Status.ESCALATED,
            escalated_at=now,
            escalation_reason=escalation.reason[:100],
            escalation_priority=escalation.priority,
        )
    # A reply is stored only if nobody took the conversation over (or closed it) while the
    # model worked.
    guard = (
        {}
        if reply is None
        else {
            "where": "status = %s AND assigned_to_id IS NOT DISTINCT FROM %s",
            "params": [conversation.status, conversation.assigned_to_id],
        }
    )
    statements.append(
        rows.update_statement(
            Conversation, tenant_id=tenant_id, pk=conversation.pk, values=changes, **guard
        )
    )
    updated = rows.run_together(statements)[-1].rowcount
    rows.inserted(new_rows)
    if reply is not None and not updated:
        # A person took over: the bot keeps quiet; their state stands.
        return _suppress(conversation, user_message, reply, body, changes, inserted=not stored)
    if escalation is not None:
        _notify_escalation(conversation.pk)
    return body


def _suppress(
    conversation: Conversation,
    user_message: Message,
    reply: Message,
    body: dict[str, Any],
    changes: dict[str, Any],
    *,
    inserted: bool,
) -> dict[str, Any]:
    messages = Message.objects.for_tenant(conversation.tenant_id)
    messages.filter(pk=reply.pk).delete()
    current = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk)
        .values_list("status", flat=True)
        .first()
    )
    body = {**body, "reply": None, "escalation": None, "conversation_status": current}
    body["suppressed"] = "human_took_over"
    user_message.metadata = {**user_message.metadata, "result": body}
    messages.filter(pk=user_message.pk).update(metadata=user_message.metadata)
    kept = {
        k: v
        for k, v in changes.items()
        if k in ("tokens_used", "last_message_at", "last_inbound_at")
    }
    kept["message_count"] = rows.Add(int(inserted))
    rows.update(Conversation, tenant_id=conversation.tenant_id, pk=conversation.pk, values=kept)
    return body


def _notify_escalation(conversation_id: Any) -> None:
    transaction.on_commit(
        lambda: enqueue("ai_agents.conversation_escalated_notify", str(conversation_id))
    )


def _stored_result(message: Message) -> dict[str, Any]:
    stored = (message.metadata or {}).get("result")
    if stored is not None:
        return dict(stored)
    # Not written by the pipeline (e.g. a message stored by a human handoff).
    return {
        "conversation_id": str(message.conversation_id),
        "message_id": str(message.pk),
        "reply": None,
        "conversation_status": message.conversation.status,
        "escalation": None,
        "usage": Spent().as_dict(),
    }
