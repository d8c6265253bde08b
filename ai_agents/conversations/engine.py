"""The conversation engine: a stored inbound message in, its reply stored and its result out.

Every message is stored first (`ai_agents.conversations.inbound`), then answered by the run
that holds its conversation's TURN, a lease on the conversation row (`turn_token`,
`turn_expires_at`): one run at a time per conversation, messages in arrival order, different
conversations in parallel. Each message goes through three phases over one `Turn`:

1. read (short): renew the turn, re-read the conversation (a person may have claimed or closed
   it), the contact, the history and the knowledge bases: one round trip;
   the rules that need no model (closed, escalated, rate limits, keyword triggers) decide here;
2. model (no transaction, no connection: `erp.db.connection_release`): retrieval, the tenant's
   token budget, the model call and the tools it chooses (their reads are short autocommit
   statements in the tenant's scope; usage rows wait for phase 3);
3. store (short transaction, one round trip): the usage rows, the reply, the inbound's result
   and the conversation's counters, then the turn given back; written only if the
   conversation's status, holder and turn are unchanged; otherwise a person took over (the
   reply is withdrawn) or the turn was lost (nothing is written).

The result is stored on the inbound message: a repeated `channel_message_id` returns it
without calling the model again. A run that cannot take the turn leaves: the holder answers
what is pending, and after releasing the turn it looks again, so no stored message waits for
nobody. A lease left by a killed worker expires (the agent's total_timeout_ms + a margin) and
`channel_pending_sweep` queues its conversation again.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext_lazy

from ai_agents.conversations import store
from ai_agents.conversations.actions import ActionSet
from ai_agents.conversations.attempts import attempts_exhausted
from ai_agents.conversations.context import (
    build_request,
    final_intent,
    history_load,
    keyword_intent,
    rules_for,
)
from ai_agents.conversations.escalation_check import early_escalation, model_escalation
from ai_agents.conversations.inbound import Inbound, message_prepare, message_receive
from ai_agents.conversations.known_thread import Prepared
from ai_agents.conversations.manual_inbox import manual_inbox_escalation
from ai_agents.conversations.model import RequestMaker, converse, number_field
from ai_agents.conversations.offer import offer_answered
from ai_agents.conversations.record import result_now, turn_record
from ai_agents.conversations.retrieval import retrieval_prefetch, retrieve
from ai_agents.conversations.session import turn_system_prompt
from ai_agents.conversations.store import conversation_load
from ai_agents.conversations.turn import Timer, Turn, TurnLost, TurnResult
from ai_agents.conversations.unheard import ask_to_write_reply
from ai_agents.knowledge.chunking import estimate_tokens
from ai_agents.models import Agent, Conversation, Message
from ai_agents.rules.input_bound import input_bound
from erp import ratelimit
from erp.db import connection_release
from erp.llm.gateway import CallContext
from erp.llm.types import LlmRequest, LlmResult
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
# A turn outlives the message it is taken for by this much: the model call and the tools are
# bounded by the agent's total_timeout_ms, the writes after them take milliseconds.
TURN_MARGIN_S = 10.0
# A REST request whose conversation is busy polls for the turn this often (growing to the
# second value) and gives up after twice the lease (the holder renews it per message).
TURN_POLL_S = (0.01, 0.1)


def turn_lease_s(agent: Agent) -> float:
    """How long a turn is held for one message before it counts as abandoned."""
    return int(agent.processing["total_timeout_ms"]) / 1000 + TURN_MARGIN_S


# --- entry points -------------------------------------------------------------------------


def message_process(
    *, agent: Agent, inbound: Inbound, on_delta: Callable[[str], None] | None = None
) -> TurnResult:
    """Stores one message and answers it before returning (the REST API, the web chat).

    With `on_delta` the model's answer is streamed to it as it arrives (the stored reply and
    the returned result are the same as without). Two messages of one conversation sent
    together are answered one after the other, in arrival order. On a known thread the
    message is stored in the round trip that takes the turn (`message_prepare`)."""
    timer = Timer()
    retrieval_prefetch(agent=agent, text=input_bound(inbound.text, inbound.channel)[0])
    with tenant_scope(agent.tenant_id):  # the agent's tenant, whoever calls (row security)
        first = message_prepare(agent=agent, inbound=inbound)
        try:
            return _answer_own(agent=agent, inbound=inbound, first=first, timer=timer, on=on_delta)
        except store.NotStored:  # the thread has no open conversation: the usual way
            return _answer_own(agent=agent, inbound=inbound, first=None, timer=timer, on=on_delta)


def _answer_own(
    *, agent: Agent, inbound: Inbound, first: Prepared | None, timer: Timer, on: Any
) -> TurnResult:
    """`message_process` once the message is prepared (stored with the turn's first read) or
    stored; `on`: its `on_delta`."""
    if first is None:
        message, _created = message_receive(agent=agent, inbound=inbound)
        if (stored := (message.metadata or {}).get("result")) is not None:
            return TurnResult.from_record(stored)  # a repeat: the first answer
    else:
        message = first.message
    timer.mark("receive")
    results: list[TurnResult] = []
    _answer_turns(
        agent=agent,
        conversation=message.conversation,
        results=results,
        own=message,
        first=first,
        timer=timer,
        on_delta=on,
    )
    own = next((r for r in results if r.message_id == str(message.pk)), None)
    return own if own is not None else result_now(message)


def conversation_answer_pending(
    *,
    conversation_id: Any = None,
    conversation: Conversation | None = None,
    deadline_s: float | None = None,
) -> list[TurnResult]:
    """Answers the conversation's stored, not yet answered messages one at a time in arrival
    order, if this run can take the conversation's turn (another run holding it answers them).
    Returns the results, oldest first. Takes the conversation as `conversation_load` gives it,
    or its id.

    `deadline_s`: after the first message, no message is started that could end (its agent's
    total_timeout_ms) more than this many seconds after the call; those stay pending for the
    next run."""
    started = time.monotonic()
    if conversation is None:
        conversation = conversation_load(conversation_id)
    if conversation is None:
        return []
    agent = conversation.agent
    results: list[TurnResult] = []
    budget_s = int(agent.processing["total_timeout_ms"]) / 1000
    with tenant_scope(agent.tenant_id):  # the agent's tenant, whoever calls (row security)
        _answer_turns(
            agent=agent,
            conversation=conversation,
            results=results,
            stop_at=None if deadline_s is None else started + deadline_s - budget_s,
        )
    return results


# --- holding the turn ---------------------------------------------------------------------


def _answer_turns(
    *,
    agent: Agent,
    conversation: Conversation,
    results: list[TurnResult],
    own: Message | None = None,
    timer: Timer | None = None,
    on_delta: Callable[[str], None] | None = None,
    stop_at: float | None = None,
    first: Prepared | None = None,
) -> None:
    """Takes the turn and answers the pending messages in arrival order: up to `own` (alone
    given `timer` and `on_delta`; waits for the turn, at most two leases), or all of them (each
    phase 3 gives the turn back and says whether another waits). After `stop_at` (monotonic)
    no message is started once one was answered: the rest waits for the next run."""
    token, lease_s = uuid.uuid4(), turn_lease_s(agent)
    give_up, pause = time.monotonic() + 2 * lease_s, TURN_POLL_S[0]
    held = False
    try:
        while stop_at is None or not results or time.monotonic() <= stop_at:
            found = store.turn_next(
                agent=agent,
                conversation=conversation,
                token=token,
                lease_s=lease_s,
                upto=own,
                first=first,
            )
            first = None  # sent (the inbound message stored, the turn taken or not)
            if found is None and own is not None and time.monotonic() < give_up:
                pause = _pause(pause)
                continue
            if found is None and own is not None:  # stored; the next run answers it
                logger.warning(
                    "pipeline.turn_busy", extra={"conversation_id": str(conversation.pk)}
                )
            held = found is not None
            if found is None or found.message is None:
                return  # another run holds the turn, or nothing is pending
            mine = own is None or found.message.pk == own.pk
            turn = Turn(
                agent=agent,
                conversation=conversation,
                message=found.message,
                token=token,
                timer=timer if mine and timer is not None else Timer(),
                on_delta=on_delta if mine else None,
            )
            _read(turn, found)
            results.append(_answer(turn))
            held = False  # phase 3 gave it back
            if (own is not None and mine) or (own is None and not turn.pending_after):
                return
    except TurnLost:
        held = False  # another run holds it now
    finally:
        if held:
            store.turn_release(conversation=conversation, token=token)


def _pause(pause: float) -> float:
    """A request waiting for the turn holds no connection; it waits longer each time."""
    connection_release()
    time.sleep(pause)
    return min(pause * 2, TURN_POLL_S[1])


# --- one message: read, model, store -------------------------------------------------------


def _answer(turn: Turn) -> TurnResult:
    """Phases 2 and 3 for one message (see the module docstring). The usage rows of the
    model calls travel with the reply (sent on their own if anything fails before)."""
    with rows.survive_rollback(), rows.deferred_writes(anywhere=True):
        if not _decided_without_model(turn):
            connection_release()  # phase 2 holds no connection: the pool serves other turns
            _model(turn)
        return turn_record(turn)


def _read(turn: Turn, found: store.TurnRead) -> None:
    """Phase 1: what `store.turn_next` read for this message (one round trip, the turn renewed
    with it)."""
    turn.contact = found.contact
    turn.history_found = found.history
    turn.knowledge_bases = found.knowledge_bases
    turn.previous_intents = found.intents
    turn.timer.mark("receive")


def _decided_without_model(turn: Turn) -> bool:
    """The rules decided before any model call: closed conversation or inactive agent
    (stored, unanswered; the latter waits in the inbox), a person holds it (silent), a message
    that failed too often (escalated), a rate limit (one notice), a keyword or user-request
    trigger (escalated)."""
    agent, conversation = turn.agent, turn.conversation
    if conversation.status not in Conversation.OPEN_STATUSES or not agent.is_active:
        turn.escalation = manual_inbox_escalation(turn)  # agent off: waits for a person
        return True
    if conversation.status == Conversation.Status.ESCALATED:
        return True  # a human has it: the bot stays silent, no model call
    if attempts_exhausted(turn):
        return True  # failed too often (ai_agents/conversations/attempts.py): a person takes it
    unheard = ask_to_write_reply(turn.message)
    if unheard is not None:
        turn.reply_text = unheard  # a voice note nobody could hear (services/whatsapp_media.py)
        return True
    _bound_input(turn)
    limited = ratelimit.hit(
        f"conv-msgs:{conversation.pk}",
        limit=int(agent.processing["messages_per_minute"]),
        window_s=60,
    )
    if not limited.allowed:
        # RN-4: stored, no model call, at most one polite notice per window.
        _limit_notice(
            turn, f"conv-msgs:{conversation.pk}", {"retry_after_s": limited.retry_after_s}
        )
        return True
    return _early_triggers(turn) or offer_answered(turn)  # the no-information offer's answer


def _bound_input(turn: Turn) -> None:
    """Everything after works on the message cut to its channel's limit (stored whole)."""
    text, full_length = input_bound(turn.message.content, turn.conversation.channel)
    turn.text = turn.prompt_text = text
    if full_length is not None:
        turn.meta["input_truncated"] = {"chars": full_length, "kept": len(text)}
        turn.prompt_text = f"{text}\n{INPUT_CUT_NOTE % {'chars': full_length, 'kept': len(text)}}"


def _limit_notice(turn: Turn, key: str, limited: dict[str, Any]) -> None:
    turn.meta["rate_limited"] = limited
    if ratelimit.notice_once(key, limited["retry_after_s"]):
        turn.reply_text = str(RATE_LIMIT_NOTICE)


def _early_triggers(turn: Turn) -> bool:
    """History, then the triggers that need no model (keywords, loops, the customer asking
    for a person)."""
    turn.rules = rules = rules_for(turn.agent)
    turn.history, turn.recent = history_load(
        conversation=turn.conversation,
        config=turn.agent.history,
        before=turn.message.created_at,
        found=turn.history_found,
    )
    turn.keyword = early = keyword_intent(turn.text, rules)
    if early:
        turn.meta["intent_detected"] = early.intent
    turn.escalation = early_escalation(turn, early.intent if early else None)
    turn.timer.mark("triggers")
    if turn.escalation is not None:
        turn.reply_text = turn.escalation.message or turn.agent.escalation_message
        return True
    return False


def _model(turn: Turn) -> None:
    """Phase 2, without a transaction or a connection of its own: context, retrieval, the
    tenant's token budget, then the model and its tools."""
    agent = turn.agent
    system = turn_system_prompt(turn)
    turn.timer.mark("context")
    usage = _call_context(turn)
    turn.retrieval = retrieve(
        agent=agent,
        query=turn.text,
        processing=agent.processing,
        knowledge_bases=turn.knowledge_bases,
        usage=usage,
    )
    turn.timer.mark("retrieve")
    estimate = estimate_tokens(system) + estimate_tokens(turn.prompt_text)
    estimate += sum(estimate_tokens(t.content) for t in turn.history)
    estimate += sum(estimate_tokens(h.content) for h in turn.retrieval.hits)
    budget = ratelimit.hit(
        f"tenant-tokens:{agent.tenant_id}",
        limit=int(agent.processing["tokens_per_minute"]),
        window_s=60,
        amount=max(0, estimate),
    )
    if not budget.allowed:
        # The tenant's tokens per minute are spent: stored, no model call, one notice.
        limited = {"retry_after_s": budget.retry_after_s, "scope": "tenant_tokens"}
        _limit_notice(turn, f"tenant-tokens:{turn.conversation.pk}", limited)
        return
    answered = converse(turn, request_for=_request_maker(turn, system), usage=usage)
    if answered is None:
        return  # the model failed: the fallback (or an escalation) is set
    difference = turn.spent.input_tokens + turn.spent.output_tokens - estimate
    if difference:  # the window corrected with real usage
        ratelimit.add(f"tenant-tokens:{turn.agent.tenant_id}", amount=difference, window_s=60)
    _decide(turn, *answered)


def _request_maker(turn: Turn, system: str) -> RequestMaker:
    """The model request for this turn with the actions offered and the tool rounds so far."""

    def request_for(offered: ActionSet, exchange: list[LlmMessage]) -> LlmRequest:
        return build_request(
            agent=turn.agent,
            system=system,
            history=turn.history,
            text=turn.prompt_text,
            hits=turn.retrieval.hits,
            processing=turn.agent.processing,
            actions=offered,
            exchange=exchange,
            rules=turn.rules,
        )

    return request_for


def _call_context(turn: Turn) -> CallContext:
    return CallContext(
        tenant=turn.agent.tenant,
        agent_id=turn.agent.pk,
        conversation_id=turn.conversation.pk,
        message_id=turn.message.pk,
    )


def _decide(turn: Turn, result: LlmResult, parsed: Any) -> None:
    """The model's answer, or an escalation its sentiment, intent, confidence or own request
    triggers."""
    rules = turn.rules or rules_for(turn.agent)
    sentiment = number_field(parsed, "sentiment", -1, 1)
    confidence = number_field(parsed, "confidence", 0, 1)
    llm_intent = parsed.fields.get("intent")
    intent = final_intent(
        turn.text,
        rules,
        keyword=turn.keyword,
        llm_intent=llm_intent if isinstance(llm_intent, str) else None,
        llm_confidence=confidence,
    )
    turn.meta.update(
        model_used=result.model,
        provider=result.provider,
        intent_detected=intent,
        sentiment=sentiment,
        confidence=confidence,
        action=parsed.name,
        broken_output=parsed.broken,
    )
    turn.rules = rules
    signals = {"sentiment": sentiment, "intent": intent, "confidence": confidence}
    turn.escalation = model_escalation(turn, parsed=parsed, signals=signals)
    if turn.escalation is not None:
        turn.reply_text = turn.escalation.message or turn.agent.escalation_message
    elif parsed.broken and parsed.raw.lstrip().startswith("{"):
        turn.reply_text = turn.agent.fallback_message  # never show the customer raw JSON
    else:
        turn.reply_text = parsed.answer or turn.agent.fallback_message


__all__ = [
    "Inbound",
    "TurnLost",
    "conversation_answer_pending",
    "conversation_load",
    "message_process",
    "turn_lease_s",
]
