"""The conversation engine: a stored inbound message in, its reply stored and its result out.

Every message is stored first (`ai_agents.conversations.inbound`), then answered by the run
that holds its conversation's TURN, a lease on the conversation row (`turn_token`,
`turn_expires_at`): one run at a time per conversation, messages in arrival order, different
conversations in parallel. Each message goes through three phases over one `Turn` (the work
of phases 1-2 on the turn is in `phases.py`, which the playground runs too):

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

from ai_agents.conversations import store
from ai_agents.conversations.attempts import attempts_exhausted
from ai_agents.conversations.burst import burst_rest, merges
from ai_agents.conversations.inbound import Inbound, message_prepare, message_receive
from ai_agents.conversations.known_thread import Prepared
from ai_agents.conversations.manual_inbox import manual_inbox_escalation
from ai_agents.conversations.offer import offer_answered
from ai_agents.conversations.phases import (
    bound_input,
    call_context,
    early_triggers,
    limit_notice,
    model_phase,
    token_correction_send,
)
from ai_agents.conversations.record import result_now, turn_record
from ai_agents.conversations.retrieval import retrieval_prefetch
from ai_agents.conversations.store import conversation_load
from ai_agents.conversations.turn import Timer, Turn, TurnLost, TurnResult
from ai_agents.conversations.unheard import ask_to_write_reply
from ai_agents.models import Agent, Conversation, Message
from ai_agents.rules.input_bound import input_bound
from erp import ratelimit
from erp.db import connection_release
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

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
    merging = own is None and merges(agent, conversation)  # one reply per burst (burst.py)
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
            _read(turn, found, burst=merging)
            results.append(_answer(turn))
            held = False  # phase 3 gave it back
            # A merging run answers one burst: the next one gets its own quiet window.
            if (own is not None and mine) or (own is None and (merging or not turn.pending_after)):
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
        try:
            if not _decided_without_model(turn):
                connection_release()  # phase 2 holds no connection: the pool serves other turns
                model_phase(turn, usage=call_context(turn))
            return turn_record(turn)
        finally:
            # The token correction the reply's inbox event did not take (a failure, no event
            # yet in an enclosing transaction): sent now, once.
            token_correction_send(turn)


def _read(turn: Turn, found: store.TurnRead, *, burst: bool = False) -> None:
    """Phase 1: what `store.turn_next` read for this message (one round trip, the turn renewed
    with it); with `burst`, the later messages answered with it are claimed (a read more:
    what arrives after it waits for the next turn)."""
    if burst:
        turn.burst = burst_rest(turn)
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
    bound_input(turn)
    limited = ratelimit.hit(
        f"conv-msgs:{conversation.pk}",
        limit=int(agent.processing["messages_per_minute"]),
        window_s=60,
        amount=1 + len(turn.burst),  # messages, not replies: a burst counts each of its own
    )
    if not limited.allowed:
        # RN-4: stored, no model call, at most one polite notice per window.
        limit_notice(turn, f"conv-msgs:{conversation.pk}", {"retry_after_s": limited.retry_after_s})
        return True
    return early_triggers(turn) or offer_answered(turn)  # the no-information offer's answer


__all__ = [
    "Inbound",
    "TurnLost",
    "conversation_answer_pending",
    "conversation_load",
    "message_process",
    "turn_lease_s",
]
