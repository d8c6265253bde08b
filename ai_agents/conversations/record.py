"""Phase 3 of a turn (ai_agents/conversations/engine.py): the reply, the inbound's result and
the conversation's counters in one short transaction, the conversation's UPDATE guarded by its
status, holder and turn as phase 1 read them; the turn is given back in the same round trip.

- guard holds: everything is written; an escalation notifies the team after the commit;
- the turn is no longer this run's (its lease expired and another run took it): nothing is
  written (`TurnLost`); the new holder answers the message;
- a person took the conversation over or closed it while the model worked: the reply is
  withdrawn, the inbound's result says `suppressed: human_took_over`, the person's state stands.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from ai_agents.conversations import store
from ai_agents.conversations.burst import burst_last, burst_result_statements
from ai_agents.conversations.escalation_check import escalation_meta
from ai_agents.conversations.phases import token_correction_commands
from ai_agents.conversations.retrieval import citations
from ai_agents.conversations.turn import EscalationOut, ReplyOut, Turn, TurnLost, TurnResult
from ai_agents.models import Conversation, Message
from ai_agents.rules.escalation_labels import escalation_record
from ai_agents.services.inbox_events import inbox_event_publish
from ai_agents.services.stats_facts import bot_reply_changes
from erp.celery import enqueue
from erp.tenancy import rows


def turn_record(turn: Turn) -> TurnResult:
    """Phase 3, one short transaction: the reply, the inbound's result and the conversation's
    counters (and escalation), the conversation's UPDATE guarded by its status, holder and
    turn as read in phase 1. Returns the result, also kept on the inbound for repeats."""
    now = timezone.now()
    reply = _reply_row(turn, now)
    result = _result(turn, reply)
    turn.message.metadata = {**turn.message.metadata, "result": result.as_record()}
    _timings(turn, reply)
    changes = _conversation_changes(turn, reply, now)
    spent = rows.take_deferred_durable()  # the model calls' usage rows (engine._answer)
    try:
        return _write(
            turn, reply=reply, result=result, changes=changes, spent=[s for s, _ in spent]
        )
    except BaseException:
        # Tokens spent are recorded whatever happened after the call (RN-6).
        rows.send_after_failure([durable for _, durable in spent if durable is not None])
        raise


def _write(
    turn: Turn,
    *,
    reply: Message | None,
    result: TurnResult,
    changes: dict[str, Any],
    spent: list[rows.Statement],
) -> TurnResult:
    conversation, token = turn.conversation, turn.token
    with transaction.atomic():
        # The turn is given back in the same round trip (by the conversation's UPDATE when
        # its guard holds, else by the release after it), then the pending messages are looked
        # at again: a message whose run found the turn taken is seen here, and one stored
        # later finds the turn free (its run waits on this row until the COMMIT).
        *_, updated, released, pending = rows.run_together(
            [
                *spent,
                *_store_statements(turn, reply, changes),
                store.turn_release_statement(conversation=conversation, token=token),
                store.pending_exists_statement(conversation=conversation),
            ]
        )
        if reply is not None:
            rows.inserted([reply])
        turn.pending_after = bool(pending.rows)
        if not updated.rowcount:  # else it released the turn (the release matched nothing)
            if not released.rowcount:
                raise TurnLost  # rolled back: the new holder answers the message
            if reply is None:  # pragma: no cover - without a reply only the turn guards
                raise TurnLost
            # A person took over (or closed it) while the model worked: the bot keeps quiet.
            return _suppress(turn, reply, result, changes)
        if turn.escalation is not None:
            _notify_escalation(turn.conversation.pk)
        inbox_event_publish(
            tenant_id=conversation.tenant_id,
            conversation_id=conversation.pk,
            kind="message" if turn.escalation is None else "status",
            along=lambda: token_correction_commands(turn),  # one round trip after the model
        )
    return result


def _reply_row(turn: Turn, now: Any) -> Message | None:
    """The reply (not saved yet), or None when the bot keeps quiet."""
    if turn.reply_text is None:
        return None
    spent, retrieval = turn.spent, turn.retrieval
    return Message(
        tenant_id=turn.conversation.tenant_id,
        conversation=turn.conversation,
        agent_id=turn.conversation.agent_id,
        role=Message.Role.ASSISTANT,
        content=turn.reply_text,
        input_tokens=spent.input_tokens if spent.calls else None,
        output_tokens=spent.output_tokens if spent.calls else None,
        # The chunks the model was given (also when its answer gave way to an escalation or
        # the fallback); citations only go with an answer.
        rag_chunks_used=[str(h.chunk_id) for h in retrieval.hits]
        if retrieval.hits and (spent.calls or "error" in turn.meta)
        else None,
        rag_search_time_ms=retrieval.elapsed_ms if retrieval.hits or retrieval.timed_out else None,
        tool_calls=turn.meta.pop("tool_calls", None) or None,
        reply_to=burst_last(turn),  # a burst's newest message (e-mail threads on it)
        created_at=max(now, burst_last(turn).created_at + timedelta(microseconds=1)),
    )


def _result(turn: Turn, reply: Message | None) -> TurnResult:
    escalation = turn.escalation
    return TurnResult(
        conversation_id=str(turn.conversation.pk),
        message_id=str(turn.message.pk),
        reply=None
        if reply is None
        else ReplyOut(
            id=str(reply.pk),
            text=reply.content,
            citations=citations(turn.retrieval.hits)
            if turn.reply_text and escalation is None and turn.meta.get("outcome") != "no_answer"
            else [],
            options=list(turn.meta.get("options") or []) if escalation is None else [],
        ),
        conversation_status=Conversation.Status.ESCALATED
        if escalation is not None
        else turn.conversation.status,
        escalation=None
        if escalation is None
        else EscalationOut(reason=escalation.reason, priority=escalation.priority),
        usage=turn.spent.as_dict(),
        rate_limited=turn.meta.get("rate_limited"),
    )


def _timings(turn: Turn, reply: Message | None) -> None:
    """Per-step times: with the reply, or with the message when there is none."""
    turn.meta.pop("tool_calls", None)
    turn.timer.mark("finish")
    timings = {**turn.timer.steps, "total": int(turn.timer.elapsed_s * 1000)}
    if reply is None:
        turn.message.metadata = {**turn.message.metadata, "timings_ms": timings}
        return
    turn.meta["timings_ms"] = timings
    if turn.burst:  # the reply answers these messages together
        turn.meta["burst"] = [str(m.pk) for m in (turn.message, *turn.burst)]
    turn.meta["response_time_ms"] = timings["total"]
    if turn.escalation is not None:
        turn.meta["escalation_notice"] = True  # the one bot message an escalated chat may send
        turn.meta["escalation"] = escalation_meta(turn.escalation)  # reason, layer, detail
    reply.metadata = turn.meta


def _conversation_changes(turn: Turn, reply: Message | None, now: Any) -> dict[str, Any]:
    changes: dict[str, Any] = {
        "message_count": rows.Add(int(reply is not None)),
        "tokens_used": rows.Add(turn.spent.input_tokens + turn.spent.output_tokens),
        "last_message_at": now,
    }
    if reply is not None:
        no_answer = reply.metadata.get("outcome") == "no_answer"
        changes.update(bot_reply_changes(at=reply.created_at, no_answer=no_answer))
    if turn.model_failed is not None:  # consecutive failures: one more, or back to none
        changes["model_failures"] = rows.Add(1) if turn.model_failed else 0
    if turn.escalation is not None:
        changes.update(
            status=Conversation.Status.ESCALATED,
            escalated_at=now,
            escalation_reason=turn.escalation.reason[:100],
            escalation_priority=turn.escalation.priority,
            escalation_info=escalation_record(
                turn.escalation,
                history=[(item.role, item.content) for item in turn.history],
                text=turn.text or turn.message.content,
                at=now,
            ),
            model_failures=0,  # a person takes it from here; the count starts again after
        )
    return changes


def _store_statements(
    turn: Turn, reply: Message | None, changes: dict[str, Any]
) -> list[rows.Statement]:
    """The inbound's result, the reply and the conversation's guarded UPDATE (last: its
    rowcount says whether the guard held), in one round trip."""
    conversation = turn.conversation
    statements = [
        rows.update_statement(
            Message,
            tenant_id=conversation.tenant_id,
            pk=turn.message.pk,
            values={"metadata": turn.message.metadata},
        ),
        *burst_result_statements(turn, turn.message.metadata["result"]),
    ]
    if reply is not None:
        statements.append(rows.insert_statement([reply]))
    where, params = "turn_token = %s", list[Any]([turn.token])  # more types follow
    if reply is not None:
        # A reply is stored only if nobody took the conversation over (or closed it) while
        # the model worked.
        where += " AND status = %s AND assigned_to_id IS NOT DISTINCT FROM %s"
        params += [conversation.status, conversation.assigned_to_id]
    statements.append(
        rows.update_statement(
            Conversation,
            tenant_id=conversation.tenant_id,
            pk=conversation.pk,
            # The turn given back with the counters: one write of the row, not two.
            values={**changes, **_TURN_FREE},
            where=where,
            params=params,
        )
    )
    return statements


_TURN_FREE = {"turn_token": rows.Sql("NULL"), "turn_expires_at": rows.Sql("NULL")}


def _suppress(
    turn: Turn, reply: Message, result: TurnResult, changes: dict[str, Any]
) -> TurnResult:
    """The reply withdrawn; the inbound's result says why; the person's state stands."""
    conversation = turn.conversation
    messages = Message.objects.for_tenant(conversation.tenant_id)
    messages.filter(pk=reply.pk).delete()
    current = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk)
        .values_list("status", flat=True)
        .first()
    )
    result = dataclasses.replace(
        result,
        reply=None,
        escalation=None,
        conversation_status=current,
        suppressed="human_took_over",
    )
    turn.message.metadata = {**turn.message.metadata, "result": result.as_record()}
    messages.filter(pk=turn.message.pk).update(metadata=turn.message.metadata)
    if turn.burst:
        rows.run_together(burst_result_statements(turn, turn.message.metadata["result"]))
    kept = {k: v for k, v in changes.items() if k in ("tokens_used", "last_message_at")}
    rows.update(Conversation, tenant_id=conversation.tenant_id, pk=conversation.pk, values=kept)
    return result


def _notify_escalation(conversation_id: Any) -> None:
    transaction.on_commit(
        lambda: enqueue("ai_agents.conversation_escalated_notify", str(conversation_id))
    )


def result_now(message: Message) -> TurnResult:
    """`message`'s stored result (answered by another run), or, unanswered, the result that
    says so."""
    stored = store.message_result(message=message)
    if stored is not None:
        return TurnResult.from_record(stored)
    return TurnResult(
        conversation_id=str(message.conversation_id),
        message_id=str(message.pk),
        conversation_status=message.conversation.status,
    )
