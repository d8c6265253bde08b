"""Every hand-written SQL statement of the conversation engine, in one place.

The engine's phases only name these: the conversation's turn (a lease, see `turn_take`), what
answering one message reads in one round trip (`turn_read`), the pending messages.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import DateTimeField, Func

from ai_agents.conversations.attempts import attempt_count_statement
from ai_agents.conversations.contact_rows import contact_settle, contact_statement, contact_upsert
from ai_agents.conversations.history_sql import (
    HistoryRow,
    conversation_history_statement,
    intents_statement,
)
from ai_agents.conversations.known_thread import (
    NotStored,
    Prepared,
    adopt,
    new_conversation,
    open_conversation_where,
    open_row_statement,
    stored_conversation_ref,
)
from ai_agents.models import Agent, Contact, Conversation, KnowledgeBase, Message
from ai_agents.selectors.knowledge import agent_knowledge_bases_statement
from ai_agents.services.conversations import conversation_expire_if_idle
from erp.db import connection_release
from erp.retry import Backoff, call_with_retries
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

# Giving a turn back after a failure: 0.5 + 1 + 2 + 4 s between five attempts.
RELEASE_BACKOFF = Backoff(attempts=5, base_delay_s=0.5, factor=2.0)


def receive_read(
    *, agent: Agent, channel: str, thread_id: str, contact_data: Mapping[str, Any]
) -> tuple[Contact, Conversation | None]:
    """In ONE round trip, the contact (created or updated as `contact_upsert` does) and the
    thread's open conversation (None: none yet; `conversation_open` makes it)."""
    contact_found, conversation_found = rows.run_together(
        [
            contact_statement(agent.tenant_id, str(contact_data["external_id"])),
            open_conversation_statement(agent, channel, thread_id),
        ]
    )
    contact = contact_settle(agent.tenant, contact_data, rows.first(Contact, contact_found))
    return contact, rows.first(Conversation, conversation_found)


def message_store(*, message: Message, changes: Mapping[str, Any]) -> None:
    """The inbound message and its conversation's counters in ONE round trip (one implicit
    transaction: both or neither; a repeated `channel_message_id` raises IntegrityError)."""
    rows.run_together(message_store_statements(message=message, changes=changes))


def message_store_statements(
    *, message: Message, changes: Mapping[str, Any]
) -> list[rows.Statement]:
    """The INSERT of the inbound message and the UPDATE of its conversation's counters."""
    statements = [
        rows.insert_statement([message]),
        rows.update_statement(
            Conversation, tenant_id=message.tenant_id, pk=message.conversation_id, values=changes
        ),
    ]
    rows.inserted([message])
    return statements


def open_conversation_statement(agent: Agent, channel: str, thread_id: str) -> rows.Statement:
    where, params = open_conversation_where(agent, channel, thread_id)
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
    absent: bool = False,
) -> Conversation:
    """The open (active or escalated) conversation of this thread (`found`, when the caller
    read it already), or a new one. A closed or expired conversation is never reused;
    concurrent first messages share one conversation (partial unique constraint: the loser
    reads the winner's row). A new one is linked to the thread's previous conversation.
    `absent`: the caller has just read that the thread has none (the first read is skipped)."""
    if found is not None and not conversation_expire_if_idle(found):
        return found
    for attempt in range(3):
        if attempt or not absent:
            statement = open_conversation_statement(agent, channel, thread_id)
            existing = rows.first(Conversation, rows.run_together([statement])[0])
            if existing is not None and not conversation_expire_if_idle(existing):
                return existing
        conversation = new_conversation(
            agent=agent, channel=channel, thread_id=thread_id, contact=contact, binding=binding
        )
        if _opened(conversation):
            return conversation
    raise RuntimeError("conversation_open: could not find or create")  # pragma: no cover


def _opened(conversation: Conversation) -> bool:
    """INSERTs the new conversation linked to its thread's previous one, in one statement
    (`known_thread.open_row_statement`, no ORM query to build: ~1.5 ms of CPU each). False:
    another request opened the thread's conversation first (nothing inserted)."""
    sql, params = open_row_statement(conversation)
    # In a caller's transaction, a savepoint keeps a refused INSERT from aborting it.
    contained = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with contained, tenant_scope(conversation.tenant_id):
            (outcome,) = rows.run_together([(f"{sql} RETURNING previous_conversation_id", params)])
    except IntegrityError:
        return False  # the thread's previous conversation was taken up by another one
    if not outcome.rows:
        return False
    conversation.previous_conversation_id = outcome.rows[0][0]
    rows.inserted([conversation])
    return True


def conversation_load(conversation_id: Any) -> Conversation | None:
    """A conversation with what answering it needs (agent, tenant, contact, binding)."""
    return (
        Conversation.objects.unscoped()
        .select_related("agent__tenant", "contact", "binding")
        .filter(pk=conversation_id)
        .first()
    )


def message_by_channel_id(*, agent: Agent, channel_message_id: str) -> Message | None:
    return (
        Message.objects.for_tenant(agent.tenant_id)
        .filter(agent=agent, channel_message_id=channel_message_id)
        .first()
    )


# --- the conversation's turn --------------------------------------------------------------
# A lease on the conversation row, not a lock: taken and released by one autocommit UPDATE
# each, so the run holding it keeps no transaction and no connection open while the model
# works, and staff claiming or closing the conversation meanwhile never wait for it. Expiry is
# read on the database's clock (every process agrees on it).

_TURN_TAKE = """
UPDATE ai_agents_conversation
SET turn_token = %s, turn_expires_at = clock_timestamp() + make_interval(secs => %s)
WHERE tenant_id = %s AND id = {conversation}
  AND (turn_token IS NULL OR turn_token = %s OR turn_expires_at < clock_timestamp())
"""
_TURN_RELEASE = """
UPDATE ai_agents_conversation SET turn_token = NULL, turn_expires_at = NULL
WHERE tenant_id = %s AND id = %s AND turn_token = %s
"""


def _turn_take_statement(
    *,
    conversation: Conversation,
    token: uuid.UUID,
    lease_s: float,
    ref: rows.Statement | None = None,
) -> rows.Statement:
    """`ref`: the conversation as SQL (default: its id as a parameter)."""
    ref_sql, ref_params = ref or ("%s", [conversation.pk])
    return (
        _TURN_TAKE.format(conversation=ref_sql),
        [token, lease_s, conversation.tenant_id, *ref_params, token],
    )


def turn_take(*, conversation: Conversation, token: uuid.UUID, lease_s: float) -> bool:
    """Takes the conversation's turn for `lease_s` seconds if it is free or expired, or renews
    it if `token` holds it already. False: another run holds it."""
    (outcome,) = rows.run_together(
        [_turn_take_statement(conversation=conversation, token=token, lease_s=lease_s)]
    )
    return outcome.rowcount == 1


def turn_release(*, conversation: Conversation, token: uuid.UUID) -> None:
    """Frees the turn if `token` still holds it (a run that ends before phase 3 gave it back).
    Retried across a database restart (~7 s): a lease left behind would keep the conversation
    unanswered until it expires. If the database stays down, the lease expires on its own."""

    def release() -> None:
        connection_release()  # a connection the restart broke is not used again
        rows.run_together([turn_release_statement(conversation=conversation, token=token)])

    try:
        call_with_retries(release, backoff=RELEASE_BACKOFF, retryable=_is_database_error)
    except DatabaseError:
        logger.warning(
            "pipeline.turn_release_failed", extra={"conversation_id": str(conversation.pk)}
        )


def _is_database_error(error: Exception) -> bool:
    return isinstance(error, DatabaseError)


def turn_release_statement(*, conversation: Conversation, token: uuid.UUID) -> rows.Statement:
    return _TURN_RELEASE, [conversation.tenant_id, conversation.pk, token]


# The database's clock now (not the transaction's start, as now() would be).
_CLOCK = Func(function="clock_timestamp", output_field=DateTimeField())


def conversations_in_turn(conversation_ids: Sequence[Any]) -> set[Any]:
    """Of these conversations (any tenant: the sweep's), those a run is answering now: their
    turn is held and not expired."""
    if not conversation_ids:
        return set()
    return set(
        Conversation.objects.unscoped()
        .filter(pk__in=list(conversation_ids), turn_token__isnull=False, turn_expires_at__gt=_CLOCK)
        .values_list("pk", flat=True)
    )


# Stored, not yet answered: the predicate of the partial index `msg_unanswered`.
_UNANSWERED = "conversation_id = {} AND role = 'user' AND NOT (metadata ? 'result')"


def _pending_where(
    conversation: Conversation, upto: Message | None, ref: rows.Statement | None = None
) -> rows.Statement:
    ref_sql, ref_params = ref or ("%s", [conversation.pk])
    where = _UNANSWERED.format(ref_sql)
    if upto is None:
        return where, ref_params
    return f"{where} AND created_at <= %s", [*ref_params, upto.created_at]


def pending_exists_statement(*, conversation: Conversation) -> rows.Statement:
    return (
        f"SELECT 1 FROM ai_agents_message WHERE tenant_id = %s AND {_UNANSWERED.format('%s')}"  # noqa: S608
        " LIMIT 1",
        [conversation.tenant_id, conversation.pk],
    )


def pending_exists(*, conversation: Conversation) -> bool:
    (outcome,) = rows.run_together([pending_exists_statement(conversation=conversation)])
    return bool(outcome.rows)


def message_result(*, message: Message) -> dict[str, Any] | None:
    """The result stored on `message` (None while unanswered)."""
    metadata = (
        Message.objects.for_tenant(message.tenant_id)
        .filter(pk=message.pk)
        .values_list("metadata", flat=True)
        .first()
    )
    return (metadata or {}).get("result")


# What may have changed since the conversation was loaded: a person claimed or closed it, an
# answer escalated it, a tool set a variable, a summary was stored.
_CONVERSATION_FRESH = (
    "status",
    "assigned_to_id",
    "claim_expires_at",
    "session_variables",
    "history_summary",
    "message_count",
    "model_failures",
)


@dataclass
class TurnRead:
    """What `turn_next` found: the message to answer and what answering it needs."""

    message: Message | None  # None: nothing is pending
    contact: Contact | None
    history: list[HistoryRow]  # newest first
    knowledge_bases: list[Any]
    intents: list[str]  # the intents detected on earlier replies, oldest first


def _pending_statements(
    conversation: Conversation, upto: Message | None, ref: rows.Statement | None, token: Any
) -> tuple[rows.Statement, rows.Statement, rows.Statement]:
    """+1 attempt on the oldest pending message (no later than `upto`) if `token` holds the
    turn, that message, and its created_at as a subquery."""
    where, params = _pending_where(conversation, upto, ref)
    counted = attempt_count_statement(
        tenant_id=conversation.tenant_id,
        pending=(where, params),
        conversation=ref or ("%s", [conversation.pk]),
        token=token,
    )
    first = rows.select_statement(
        Message,
        tenant_id=conversation.tenant_id,
        where=where,
        params=params,
        order_by="created_at, id",
        limit=1,
    )
    created_at = (
        f"SELECT created_at FROM ai_agents_message WHERE tenant_id = %s AND {where}"  # noqa: S608
        " ORDER BY created_at, id LIMIT 1",
        [conversation.tenant_id, *params],
    )
    return counted, first, created_at


def turn_next(
    *,
    agent: Agent,
    conversation: Conversation,
    token: uuid.UUID,
    lease_s: float,
    upto: Message | None = None,
    first: Prepared | None = None,
) -> TurnRead | None:
    """In ONE round trip: takes (or renews) the turn, then reads the oldest pending message (no
    later than `upto`), the conversation (its changing fields are copied onto `conversation`),
    its contact, the history before that message (see `history_statement`), the intents
    detected so far and the agent's knowledge bases; counts the attempt (`attempts`). None: the
    turn is another run's; no `message`: nothing is pending (the turn is held). `first`: the
    REST path's inbound message, stored in front in the same round trip and implicit
    transaction (`known_thread`); the conversation is found through it and read whole into
    `conversation`, the stand-in. Raises `NotStored` when it was not stored (nothing was
    written)."""
    ref = None if first is None else stored_conversation_ref()
    counted, first_pending, pending_at = _pending_statements(conversation, upto, ref, token)
    ref_sql, ref_params = ref or ("%s", [conversation.pk])
    *_, taken, _counted, pending, fresh, contact, history, intents, kbs = rows.run_together(
        [
            *([] if first is None else [first.statement]),
            _turn_take_statement(conversation=conversation, token=token, lease_s=lease_s, ref=ref),
            counted,
            first_pending,
            rows.select_statement(
                Conversation, tenant_id=agent.tenant_id, where=f"id = {ref_sql}", params=ref_params
            ),
            _contact_of_statement(agent, conversation, ref),
            conversation_history_statement(
                conversation=conversation,
                config=agent.history,
                conversation_ref=ref,
                before_sql=pending_at,
            ),
            intents_statement(conversation=conversation, conversation_ref=ref),
            agent_knowledge_bases_statement(agent=agent),
        ]
    )
    current = rows.first(Conversation, fresh)
    if first is not None:
        _first_stored(conversation, current, first)
    message = rows.first(Message, pending)
    if taken.rowcount != 1 or current is None:
        return None
    for name in _CONVERSATION_FRESH:
        setattr(conversation, name, getattr(current, name))
    if message is not None:
        message.conversation = conversation
    return TurnRead(
        message=message,
        contact=_contact_checked(agent, rows.first(Contact, contact), first),
        history=list(history.rows or []),
        knowledge_bases=rows.instances(KnowledgeBase, kbs),
        intents=[str(row[0]) for row in reversed(intents.rows or [])],
    )


def _contact_of_statement(
    agent: Agent, conversation: Conversation, ref: rows.Statement | None
) -> rows.Statement:
    params: list[Any]
    if ref is None:
        where, params = "id = %s", [conversation.contact_id]
    else:
        where = (
            "id = (SELECT contact_id FROM ai_agents_conversation"  # noqa: S608
            f" WHERE tenant_id = %s AND id = {ref[0]})"
        )
        params = [agent.tenant_id, *ref[1]]
    return rows.select_statement(Contact, tenant_id=agent.tenant_id, where=where, params=params)


def _first_stored(
    conversation: Conversation, current: Conversation | None, first: Prepared
) -> None:
    """The prepared message was stored into `current` (else `NotStored`): the stand-in becomes
    that row."""
    if current is None:
        raise NotStored
    adopt(conversation, current)
    first.message.conversation = conversation
    rows.inserted([first.message])


def _contact_checked(
    agent: Agent, contact: Contact | None, first: Prepared | None
) -> Contact | None:
    """The conversation's contact; for a prepared message, settled with what the message says
    of its sender as `receive_read` does (a write only when something changed; the sender's own
    contact when the thread's is another)."""
    if first is None:
        return contact
    external_id = str(first.contact_data["external_id"])
    if contact is None or contact.external_id != external_id:
        contact_upsert(tenant=agent.tenant, data=first.contact_data)
        return contact
    return contact_settle(agent.tenant, first.contact_data, contact)
