"""Accepting inbound messages: store first, answer on the real-time queue.

`inbound_clean` is the one place where what a customer sent (text, contact, ids, metadata)
is made storable: every channel, the REST API and the web chat build their `Inbound` and pass
it here (through `inbound_accept` or directly), so a NUL or a lone surrogate becomes U+FFFD and
the message is stored instead of failing with a 500 (see `erp.storable`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from ai_agents.conversations import contact_rows, known_thread, store
from ai_agents.conversations.known_thread import Prepared
from ai_agents.models import Agent, ChannelBinding, Contact, Conversation, Message
from ai_agents.services import inbox_events
from ai_agents.services.conversations import conversation_expire_if_idle
from ai_agents.services.inbox_events import inbox_event_publish
from ai_agents.services.rating import rating_reply_take
from ai_agents.services.stats_facts import customer_message_changes
from erp.celery import task_command
from erp.storable import storable, storable_text
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

ANSWER_TASK = "ai_agents.channel_conversation_answer"


@dataclass(frozen=True)
class Inbound:
    text: str
    contact: Mapping[str, Any]  # external_id, name?, email?, phone?
    channel: str = "api"
    thread_id: str | None = None  # channel conversation id; default: the contact's id
    channel_message_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    binding: Any = None  # the ChannelBinding it came through (replies go out through it)


def inbound_message_row(
    agent: Agent, conversation: Conversation, inbound: Inbound, *, created_at: Any
) -> Message:
    """The customer's message as a row (not saved)."""
    return Message(
        tenant_id=agent.tenant_id,
        conversation=conversation,
        agent=agent,
        role=Message.Role.USER,
        content=inbound.text,
        channel_message_id=inbound.channel_message_id or None,
        metadata={"channel_metadata": dict(inbound.metadata or {})},
        created_at=created_at,
    )


def message_receive(
    *,
    agent: Agent,
    inbound: Inbound,
    answer: bool = True,
) -> tuple[Message, bool]:
    """Stores one inbound message (every channel, the REST API too) before anything answers
    it; the model runs later (`conversation_answer_pending`, on the real-time queue) or right
    after (`message_process`). Returns the message and whether it
    is new: a redelivered `channel_message_id` meets the unique constraint and returns the
    first copy. With `answer=False` (reactions, auto-replies, our own mail) it is stored as
    already handled, so it is never answered.

    Takes no turn: a webhook never waits for a model call in progress. A channel's message
    (a binding and a repeat key, no transaction around) for a thread whose conversation is open
    takes ONE round trip (`_known_thread_store`); otherwise two for a known contact and
    conversation: contact and conversation, then INSERT and UPDATE (a redelivery is found by
    the failed INSERT, not by a SELECT before every new message); a first message for a thread
    (no open conversation) opens it, and inserts a new sender's contact, in one more
    (`known_thread.open_statements`)."""
    with tenant_scope(agent.tenant_id):  # the agent's tenant, whoever calls (row security)
        received = _message_receive(agent=agent, inbound=inbound, answer=answer)
    return received.message, received.created


# What takes a message before a new conversation would (a comment on a closed conversation's
# rating: `inbound_accept`): its outcome, or None.
Taker = Callable[[], "tuple[Message, bool] | None"]


@dataclass(frozen=True)
class _Received:
    """What `_message_receive` did with the message. `taken`: `before_open` took it (stored
    it elsewhere: this is its outcome), so it is not to be answered."""

    message: Message
    created: bool
    taken: bool = False


def _message_receive(
    *,
    agent: Agent,
    inbound: Inbound,
    answer: bool,
    before_open: Taker | None = None,
    lean: bool = False,
) -> _Received:
    """`message_receive`'s work, in the agent's tenant scope. `before_open`: asked before
    anything is written when the thread has no open conversation (or the message is not a
    channel's); what it returns (not None) is the outcome, marked `taken`. `lean`: the caller
    needs only the conversation's id (`_known_thread_store`)."""
    thread_id = inbound.thread_id or str(inbound.contact["external_id"])
    try:
        read = None
        if _one_trip(inbound, answer):
            message, read = _known_thread_store(agent, inbound, thread_id, lean=lean)
            if message is None and read[1] is None:  # no open conversation: one more trip
                taken = _take(before_open)
                if taken is not None:
                    _contact_keep(agent, inbound, read[0])
                    return taken
                message, read = _known_thread_store(
                    agent, inbound, thread_id, opening=read[0], lean=lean
                )
            if message is not None:
                return _Received(message, True)
        else:
            taken = _take(before_open)
            if taken is not None:
                return taken
        contact, found = read or store.receive_read(
            agent=agent, channel=inbound.channel, thread_id=thread_id, contact_data=inbound.contact
        )
        if found is not None and not conversation_expire_if_idle(found):
            # The common case, two round trips in all: outside a transaction the statement pair
            # is its own (no BEGIN/COMMIT); inside one (a view's), a savepoint keeps a refused
            # repeat from aborting it.
            with transaction.atomic() if connection.in_atomic_block else nullcontext():
                return _Received(_message_store(agent, found, inbound, answer=answer), True)
        with transaction.atomic():  # a new conversation goes away with a refused message
            conversation = store.conversation_open(
                agent=agent,
                channel=inbound.channel,
                thread_id=thread_id,
                contact=contact,
                binding=inbound.binding,
                absent=found is None,
            )
            return _Received(_message_store(agent, conversation, inbound, answer=answer), True)
    except IntegrityError:
        if not inbound.channel_message_id:
            raise
        # Redelivered: the first copy was stored (everything above was rolled back).
        existing = store.message_by_channel_id(
            agent=agent, channel_message_id=inbound.channel_message_id
        )
        if existing is None:
            raise
        return _Received(existing, False)


def _contact_keep(agent: Agent, inbound: Inbound, contact: Contact) -> None:
    """A new sender's contact, left unsaved for the opening round trip to insert, is
    inserted when no conversation opens (the message was taken by a closed conversation's
    rating comment): every sender who wrote has their row (contacts list, inbox)."""
    if contact._state.adding:
        contact_rows.contact_settle(agent.tenant, inbound.contact, None)


def _take(before_open: Taker | None) -> _Received | None:
    outcome = before_open() if before_open is not None else None
    return None if outcome is None else _Received(*outcome, taken=True)


def _one_trip(inbound: Inbound, answer: bool) -> bool:
    """A channel's message to answer, with its repeat key, outside any transaction: stored by
    `_known_thread_store` when its thread's conversation is open."""
    return (
        answer
        and inbound.binding is not None
        and bool(inbound.channel_message_id)
        and not connection.in_atomic_block
    )


def _known_thread_store(
    agent: Agent,
    inbound: Inbound,
    thread_id: str,
    *,
    opening: Contact | None = None,
    lean: bool = False,
) -> tuple[Message | None, tuple[Contact, Conversation | None]]:
    """The common case in ONE round trip and implicit transaction: the message stored into
    its thread's open (not idle) conversation with its counters (`known_thread`), then the
    sender's contact and the thread's open conversation read, as `store.receive_read` reads
    them. (None, what was read): nothing was written (no open conversation, or an idle one:
    `_message_receive` goes on with what was read). A repeated `channel_message_id` raises
    IntegrityError (nothing written either). The contact is settled afterwards (a write only
    when it is new or changed). `opening` (the sender's contact, once a first trip found the
    thread without an open conversation; not saved yet for a new sender): the same round trip
    first opens one for it (`known_thread.open_statements`: no BEGIN, savepoint or COMMIT of
    their own; a new contact is inserted there too). `lean` (the webhooks, which need only its
    id): the conversation's row comes back only when the message was not stored
    (`known_thread.open_unless_stored_statement`), so a stored message's conversation stays
    the stand-in, given its id (its other fields load on first use)."""
    conversation = known_thread.stand_in(agent=agent, channel=inbound.channel, thread_id=thread_id)
    message = inbound_message_row(agent, conversation, inbound, created_at=timezone.now())
    *_, stored, contact_row, current_row = rows.run_together(
        _known_thread_statements(agent, inbound, message, opening=opening, lean=lean)
    )
    found_contact = rows.first(Contact, contact_row)
    row = rows.first(Conversation, current_row)
    if stored.rowcount != 1 and row is None and found_contact is None and opening is None:
        # A new sender on a new thread: its contact is inserted with the conversation the
        # next round trip opens (`known_thread.open_statements`), not in a trip of its own.
        return None, (contact_rows.contact_new(agent.tenant, inbound.contact), None)
    contact = contact_rows.contact_settle(agent.tenant, inbound.contact, found_contact)
    if stored.rowcount != 1 or (row is None and not lean):
        return None, (contact, row)
    if lean:
        conversation.__dict__["id"] = stored.rows[0][0]  # type: ignore[index]  # RETURNING
    else:
        known_thread.adopt(conversation, row)  # type: ignore[arg-type]  # read: not None
    message.conversation = conversation
    rows.inserted([message])
    inbox_event_publish(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, kind="message"
    )
    return message, (contact, row)


def _known_thread_statements(
    agent: Agent, inbound: Inbound, message: Message, *, opening: Contact | None, lean: bool
) -> list[rows.Statement]:
    """`_known_thread_store`'s round trip: [the opening,] the store, the contact, the thread's
    open conversation."""
    channel, thread_id = inbound.channel, message.conversation.channel_conversation_id
    statement = known_thread.prepared_store_statement(
        message=message, agent=agent, thread_id=thread_id, binding_id=inbound.binding.pk
    )
    if lean:
        statement = known_thread.returning_conversation(statement)
        current = known_thread.open_unless_stored_statement(agent, channel, thread_id, message)
    else:
        current = store.open_conversation_statement(agent, channel, thread_id)
    opened = []
    if opening is not None:
        opened = known_thread.open_statements(
            agent=agent,
            channel=channel,
            thread_id=thread_id,
            contact=opening,
            binding=inbound.binding,
        )
    contact = contact_rows.contact_statement(agent.tenant_id, str(inbound.contact["external_id"]))
    return [*opened, statement, contact, current]


def message_prepare(*, agent: Agent, inbound: Inbound) -> Prepared | None:
    """The REST path's common case: the message and the statement that stores it into its
    thread's open conversation, NOT sent (the engine sends it with its first read, one round
    trip; `known_thread`), when no transaction or repeat key (`channel_message_id`) asks for
    `message_receive`'s care. None: `message_receive` stores it (so does the engine when the
    thread turns out to have no open conversation: `NotStored`)."""
    if inbound.channel_message_id or connection.in_atomic_block:
        return None
    thread_id = inbound.thread_id or str(inbound.contact["external_id"])
    conversation = known_thread.stand_in(agent=agent, channel=inbound.channel, thread_id=thread_id)
    message = inbound_message_row(agent, conversation, inbound, created_at=timezone.now())
    binding = inbound.binding
    statement = known_thread.prepared_store_statement(
        message=message,
        agent=agent,
        thread_id=thread_id,
        binding_id=None if binding is None else binding.pk,
    )
    return Prepared(message=message, statement=statement, contact_data=inbound.contact)


def _message_store(
    agent: Agent, conversation: Conversation, inbound: Inbound, *, answer: bool
) -> Message:
    message, changes = _message_row(agent, conversation, inbound, answer=answer)
    store.message_store(message=message, changes=changes)
    inbox_event_publish(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, kind="message"
    )
    return message


def _message_row(
    agent: Agent, conversation: Conversation, inbound: Inbound, *, answer: bool
) -> tuple[Message, dict[str, Any]]:
    """The message (not saved) and its conversation's changes."""
    now = timezone.now()
    message = inbound_message_row(agent, conversation, inbound, created_at=now)
    if not answer:
        message.metadata["result"] = {
            "conversation_id": str(conversation.pk),
            "reply": None,
            "ignored": True,
        }
    changes: dict[str, Any] = {
        "message_count": rows.Add(1),
        "last_message_at": now,
        "last_inbound_at": now,
        **customer_message_changes(now),
    }
    binding = inbound.binding
    if binding is not None and conversation.binding_id is None:
        changes["binding"] = binding.pk
    return message, changes


def inbound_accept(
    *,
    binding: ChannelBinding,
    inbound: Inbound,
    answer: bool = True,
    answers: dict[str, str] | None = None,
) -> tuple[Message, bool]:
    """Stores the message (idempotent on `channel_message_id`) and, when it is new and needs an
    answer, queues `channel_conversation_answer` once the row is committed, or, given
    `answers` (a request storing several), notes it there (conversation id -> its newest
    message id) for the caller's one `answers_enqueue`. Returns the message and whether it was
    new. An answer to a closed conversation's rating offer is stored there instead, never
    answered (ai_agents.services.rating). A comment after a rating goes to the closed
    conversation only when the thread has no open one (else the customer wrote to that): its
    window (a Redis read) is looked at only then."""
    taken = rating_reply_take(binding=binding, inbound=inbound, comments=False)
    if taken is not None:
        return taken

    def comment_take() -> tuple[Message, bool] | None:
        return rating_reply_take(binding=binding, inbound=inbound)

    agent = binding.agent
    with tenant_scope(agent.tenant_id):
        received = _message_receive(
            agent=agent,
            inbound=replace(inbound_clean(inbound), binding=binding),
            answer=answer,
            before_open=comment_take,
            lean=True,
        )
    message, created = received.message, received.created
    if received.taken:
        return message, created
    if created and answer:
        batch = {} if answers is None else answers
        batch[str(message.conversation_id)] = str(message.pk)
        if answers is None:
            answers_enqueue(batch)
    return message, created


def answers_enqueue(answers: Mapping[str, str]) -> None:
    """Queues the answer of each conversation (id -> the newest message stored for it) once
    the current transaction commits (at once outside one): one task per conversation, however
    many of its messages the request stored (the task answers all its pending messages)."""
    if answers:
        pending = dict(answers)
        transaction.on_commit(lambda: _enqueue_each(pending))


def _enqueue_each(answers: Mapping[str, str]) -> None:
    """One LPUSH per conversation, sent with the request's inbox events when it holds them
    (`inbox_events.held`: the WhatsApp webhook's one Redis round trip), else at once. If the
    broker is down the messages are safe in the database and `channel_pending_sweep` queues
    them within a minute; the webhook still answers 200."""
    commands, pushed = [], {}
    for conversation_id, message_id in answers.items():
        try:
            command = task_command(ANSWER_TASK, conversation_id, message_id)
        except Exception:
            _enqueue_failed({conversation_id: message_id})
            continue
        if command is not None:  # else Celery queued it (eager, tests, another broker)
            commands.append(command)
            pushed[conversation_id] = message_id
    if commands:
        inbox_events.commands_send(commands, failed=lambda: _enqueue_failed(pushed))


# Column widths of what a channel hands us (Contact, Conversation, Message).
_CONTACT_ID_MAX = 100
_CONTACT_FIELDS_MAX = {"name": 200, "email": 254, "phone": 40}
_THREAD_ID_MAX = 255
_MESSAGE_ID_MAX = 255


def inbound_clean(inbound: Inbound) -> Inbound:
    """`inbound` with every character PostgreSQL cannot store replaced by U+FFFD, and every
    field within its column: an id too long becomes a hash of itself (still unique, so a
    redelivery is still recognised), a name is cut."""
    contact = storable(dict(inbound.contact))
    contact["external_id"] = _bounded_id(str(contact["external_id"]), _CONTACT_ID_MAX)
    for field, limit in _CONTACT_FIELDS_MAX.items():
        if isinstance(contact.get(field), str):
            contact[field] = contact[field][:limit]
    thread_id, message_id = inbound.thread_id, inbound.channel_message_id
    return replace(
        inbound,
        text=storable_text(inbound.text),
        contact=contact,
        thread_id=_bounded_id(storable_text(thread_id), _THREAD_ID_MAX) if thread_id else thread_id,
        channel_message_id=(
            _bounded_id(storable_text(message_id), _MESSAGE_ID_MAX) if message_id else message_id
        ),
        metadata=storable(dict(inbound.metadata)) if inbound.metadata is not None else None,
    )


def _bounded_id(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()


def _enqueue_failed(answers: Mapping[str, str]) -> None:
    for conversation_id, message_id in answers.items():
        logger.exception(
            "channel.enqueue_failed",
            extra={"conversation_id": conversation_id, "message_id": message_id},
        )
