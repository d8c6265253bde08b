"""Every hand-written SQL statement of the conversation engine, in one place.

The engine's phases only name these: the conversation's turn (a lease, see `turn_take`), what
answering one message reads in one round trip (`turn_read`), the pending messages.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import DateTimeField, Func

from ai_agents.models import Agent, Contact, Conversation, KnowledgeBase, Message
from ai_agents.rules.input_bound import input_max_chars
from ai_agents.selectors.knowledge import agent_knowledge_bases_statement
from ai_agents.services.conversations import (
    conversation_expire_if_idle,
    previous_conversation_id,
)
from erp.db import connection_release
from erp.retry import Backoff, call_with_retries
from erp.tenancy import rows

logger = logging.getLogger(__name__)

# Giving a turn back after a failure: 0.5 + 1 + 2 + 4 s between five attempts.
RELEASE_BACKOFF = Backoff(attempts=5, base_delay_s=0.5, factor=2.0)


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


def receive_read(
    *, agent: Agent, channel: str, thread_id: str, contact_data: Mapping[str, Any]
) -> tuple[Contact, Conversation | None]:
    """In ONE round trip, the contact (created or updated as `contact_upsert` does) and the
    thread's open conversation (None: none yet; `conversation_open` makes it)."""
    contact_found, conversation_found = rows.run_together(
        [
            _contact_statement(agent.tenant_id, str(contact_data["external_id"])),
            _conversation_statement(agent, channel, thread_id),
        ]
    )
    contact = _contact_settle(agent.tenant, contact_data, rows.first(Contact, contact_found))
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
    reads the winner's row). A new one is linked to the thread's previous conversation."""
    if found is not None and not conversation_expire_if_idle(found):
        return found
    previous = None
    for _attempt in range(3):
        (outcome,) = rows.run_together([_conversation_statement(agent, channel, thread_id)])
        existing = rows.first(Conversation, outcome)
        if existing is not None and not conversation_expire_if_idle(existing):
            return existing
        if previous is None:
            previous = previous_conversation_id(
                tenant_id=agent.tenant_id, agent_id=agent.pk, channel=channel, thread_id=thread_id
            )
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
                    previous_conversation_id=previous,
                )
        except IntegrityError:
            continue  # another request created it first
    raise RuntimeError("conversation_open: could not find or create")  # pragma: no cover


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


def history_limit(config: Mapping[str, Any]) -> int:
    """How many of the latest messages are read for the history (truncation picks from them)."""
    return max(int(config["max_messages"]) * 3, 20)


def history_statement(
    *,
    tenant_id: int,
    conversation_sql: str,
    conversation_params: list[Any],
    limit: int,
    before: Any = None,
    before_sql: rows.Statement | None = None,
    with_first: bool = False,
    max_chars: int,
) -> rows.Statement:
    """The latest `limit` messages, newest first; `with_first` (the `smart` strategy keeps the
    conversation's first message) adds the very first when it is older than those. Each text
    is cut to `max_chars` by PostgreSQL (a huge earlier message never reaches the prompt).
    `before_sql`: the moment as a subquery (the pending message read in the same round trip)."""
    where = (
        f"tenant_id = %s AND conversation_id = {conversation_sql} AND role IN ('user', 'assistant')"
    )
    where_params: list[Any] = [tenant_id, *conversation_params]
    if before_sql is None and before is not None:
        before_sql = ("%s", [before])
    if before_sql is not None:
        # Replies given since count; later customer messages (answered after this one) do not.
        where += f" AND (role = 'assistant' OR created_at < ({before_sql[0]}))"
        where_params += before_sql[1]
    select = f"SELECT id, role, content, created_at FROM ai_agents_message WHERE {where}"  # noqa: S608
    sql, params = f"{select} ORDER BY created_at DESC LIMIT %s", [*where_params, limit]
    if with_first:
        sql = f"({sql}) UNION ({select} ORDER BY created_at LIMIT 1)"
        params += where_params
    return (
        f"SELECT id, role, left(content, %s), created_at FROM ({sql}) h ORDER BY created_at DESC",  # noqa: S608
        [max_chars, *params],
    )


HistoryRow = tuple[Any, str, str, datetime]  # (id, role, content, created_at)
PREVIOUS_INTENTS_MAX = 20  # the latest intents of a conversation given to the model


def intents_statement(*, conversation: Conversation) -> rows.Statement:
    """The latest intents detected on the conversation's replies, newest first."""
    return (
        "SELECT metadata->>'intent_detected' FROM ai_agents_message WHERE tenant_id = %s"
        " AND conversation_id = %s AND role = 'assistant'"
        " AND metadata->>'intent_detected' IS NOT NULL ORDER BY created_at DESC LIMIT %s",
        [conversation.tenant_id, conversation.pk, PREVIOUS_INTENTS_MAX],
    )


def history_rows(
    *, conversation: Conversation, config: Mapping[str, Any], before: Any = None
) -> list[HistoryRow]:
    """The conversation's latest messages for its history (see `history_statement`)."""
    (outcome,) = rows.run_together(
        [
            history_statement(
                tenant_id=conversation.tenant_id,
                conversation_sql="%s",
                conversation_params=[conversation.pk],
                limit=history_limit(config),
                before=before,
                with_first=config["truncation_strategy"] == "smart",
                max_chars=input_max_chars(conversation.channel),
            )
        ]
    )
    return list(outcome.rows or [])


# --- the conversation's turn --------------------------------------------------------------
# A lease on the conversation row, not a lock: taken and released by one autocommit UPDATE
# each, so the run holding it keeps no transaction and no connection open while the model
# works, and staff claiming or closing the conversation meanwhile never wait for it. Expiry is
# read on the database's clock (every process agrees on it).

_TURN_TAKE = """
UPDATE ai_agents_conversation
SET turn_token = %s, turn_expires_at = clock_timestamp() + make_interval(secs => %s)
WHERE tenant_id = %s AND id = %s
  AND (turn_token IS NULL OR turn_token = %s OR turn_expires_at < clock_timestamp())
"""
_TURN_RELEASE = """
UPDATE ai_agents_conversation SET turn_token = NULL, turn_expires_at = NULL
WHERE tenant_id = %s AND id = %s AND turn_token = %s
"""


def _turn_take_statement(
    *, conversation: Conversation, token: uuid.UUID, lease_s: float
) -> rows.Statement:
    return _TURN_TAKE, [token, lease_s, conversation.tenant_id, conversation.pk, token]


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
_UNANSWERED = "conversation_id = %s AND role = 'user' AND NOT (metadata ? 'result')"


def _pending_where(conversation: Conversation, upto: Message | None) -> rows.Statement:
    if upto is None:
        return _UNANSWERED, [conversation.pk]
    return f"{_UNANSWERED} AND created_at <= %s", [conversation.pk, upto.created_at]


def pending_exists_statement(*, conversation: Conversation) -> rows.Statement:
    return (
        f"SELECT 1 FROM ai_agents_message WHERE tenant_id = %s AND {_UNANSWERED} LIMIT 1",  # noqa: S608
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
    conversation: Conversation, upto: Message | None
) -> tuple[rows.Statement, rows.Statement]:
    """The oldest pending message (no later than `upto`), and its created_at as a subquery."""
    where, params = _pending_where(conversation, upto)
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
    return first, created_at


def turn_next(
    *,
    agent: Agent,
    conversation: Conversation,
    token: uuid.UUID,
    lease_s: float,
    upto: Message | None = None,
    first: Sequence[rows.Statement] = (),
) -> TurnRead | None:
    """In ONE round trip: takes (or renews) the turn, then reads the oldest pending message (no
    later than `upto`), the conversation (its changing fields are copied onto `conversation`),
    its contact, the history before that message (`history_statement`), the intents detected
    so far and the agent's knowledge bases. None: the turn is another run's; no `message`:
    nothing is pending (the turn is held: the caller gives it back). `first`: statements sent
    before, in the same round trip and implicit transaction (the REST path's inbound message)."""
    config = agent.history
    first_pending, pending_at = _pending_statements(conversation, upto)
    *_, taken, pending, fresh, contact, history, intents, kbs = rows.run_together(
        [
            *first,
            _turn_take_statement(conversation=conversation, token=token, lease_s=lease_s),
            first_pending,
            rows.select_statement(
                Conversation, tenant_id=agent.tenant_id, where="id = %s", params=[conversation.pk]
            ),
            rows.select_statement(
                Contact,
                tenant_id=agent.tenant_id,
                where="id = %s",
                params=[conversation.contact_id],
            ),
            history_statement(
                tenant_id=agent.tenant_id,
                conversation_sql="%s",
                conversation_params=[conversation.pk],
                limit=history_limit(config),
                before_sql=pending_at,
                with_first=config["truncation_strategy"] == "smart",
                max_chars=input_max_chars(conversation.channel),
            ),
            intents_statement(conversation=conversation),
            agent_knowledge_bases_statement(agent=agent),
        ]
    )
    current = rows.first(Conversation, fresh)
    message = rows.first(Message, pending)
    if taken.rowcount != 1 or current is None:
        return None
    for name in _CONVERSATION_FRESH:
        setattr(conversation, name, getattr(current, name))
    if message is not None:
        message.conversation = conversation
    return TurnRead(
        message=message,
        contact=rows.first(Contact, contact),
        history=list(history.rows or []),
        knowledge_bases=rows.instances(KnowledgeBase, kbs),
        intents=[str(row[0]) for row in reversed(intents.rows or [])],
    )
