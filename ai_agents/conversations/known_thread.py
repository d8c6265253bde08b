"""The REST path's common case: a message for a thread whose conversation is open, stored in
the round trip that takes the turn (`store.turn_next(first=...)`), with no read before it.

One statement stores it: a CTE updates the thread's open conversation's counters (only if it
is open and not idle for `INACTIVITY_EXPIRY`: such a conversation expires at the door) and
returns its id, and the message is inserted from that row. The turn's statements that follow
in the same round trip find the conversation through a transaction-local setting the INSERT
sets (`stored_conversation_ref`). When the CTE found
nothing, nothing was written and everything after it touched no row: `NotStored`, and
`message_receive` stores the message the usual way (the idle conversation expires there, a
new one is opened).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS
from django.db.models import DEFERRED

from ai_agents.conversations.contact_rows import contact_insert_statement
from ai_agents.models import Agent, Conversation, Message
from ai_agents.services.conversations import INACTIVITY_EXPIRY
from erp.tenancy import rows


class NotStored(Exception):
    """The thread has no open conversation to take the message (or it is idle): nothing was
    written."""


@dataclass(frozen=True)
class Prepared:
    """A message for a known thread and the statement that stores it, not sent yet.
    `message.conversation` is a stand-in (agent, channel, thread) until `turn_next` reads the
    row into it."""

    message: Message
    statement: rows.Statement
    contact_data: Mapping[str, Any]


# `Conversation.OPEN_STATUSES` as SQL (our constants, written out: an array parameter costs
# psycopg a type lookup on every statement, in the webhook's acknowledgement too).
_OPEN_SQL = ", ".join(f"'{status.value}'" for status in Conversation.OPEN_STATUSES)


def open_conversation_where(agent: Agent, channel: str, thread_id: str) -> rows.Statement:
    """The thread's open conversation (at most one: partial unique constraint)."""
    return (
        "agent_id = %s AND channel = %s AND channel_conversation_id = %s"
        f" AND status IN ({_OPEN_SQL})",
        [agent.pk, channel, thread_id],
    )


# The conversation `prepared_store_statement` stored its message in, for the statements after
# it in the same round trip (one transaction): a transaction-local setting the INSERT sets.
# Each of them looked the message up again before (an index lookup per statement, about ten
# per turn: most of what PostgreSQL executed more per message than before issue 14).
STORED_SETTING = "erp.stored_conversation"


def stored_conversation_ref() -> rows.Statement:
    """The conversation the round trip's `prepared_store_statement` stored its message in, as
    SQL (NULL when it stored nothing: then the statements that use it touch no row)."""
    # A subquery: evaluated once per statement (a scan would read the setting for every row).
    return f"(SELECT NULLIF(current_setting('{STORED_SETTING}', true), '')::uuid)", []


def prepared_store_statement(
    *, message: Message, agent: Agent, thread_id: str, binding_id: Any
) -> rows.Statement:
    """The message (`message.created_at` is its time) inserted into the thread's open
    conversation, whose counters (and binding, when it has none) are updated with it."""
    now = message.created_at
    where, params = open_conversation_where(agent, message.conversation.channel, thread_id)
    counters = (
        "WITH c AS (UPDATE ai_agents_conversation SET message_count = message_count + 1,"  # noqa: S608
        " last_message_at = %s, last_inbound_at = %s, binding_id = COALESCE(binding_id, %s),"
        # statistics facts (services/stats_facts.customer_message_changes)
        " customer_messages = customer_messages + 1,"
        " first_customer_at = COALESCE(first_customer_at, %s)"
        f" WHERE tenant_id = %s AND {where}"
        " AND NOT (status = %s AND COALESCE(last_message_at <= %s, false)) RETURNING id)",
        [
            *(now, now, binding_id, now, agent.tenant_id),
            *params,
            *(Conversation.Status.ACTIVE, now - INACTIVITY_EXPIRY),
        ],
    )
    return rows.insert_select_statement(
        message,
        prefix=counters,
        columns={"conversation_id": "s.id"},
        from_sql=(
            "FROM c, LATERAL (SELECT c.id,"
            f" set_config('{STORED_SETTING}', c.id::text, true)) AS s (id, stored)"
        ),
    )


def returning_conversation(statement: rows.Statement) -> rows.Statement:
    """`prepared_store_statement` giving back the conversation id it stored the message in."""
    return f"{statement[0]} RETURNING conversation_id", statement[1]


def open_unless_stored_statement(
    agent: Agent, channel: str, thread_id: str, message: Message
) -> rows.Statement:
    """The thread's open conversation, as `store.open_conversation_statement` reads it, found
    only when `message` was not stored (by an earlier statement of the round trip): its row is
    needed only then. Built whole, its condition inside the WHERE `rows.select_statement`
    writes (not appended to a finished SELECT, where an ORDER BY or LIMIT would break it)."""
    where, params = open_conversation_where(agent, channel, thread_id)
    return rows.select_statement(
        Conversation,
        tenant_id=agent.tenant_id,
        where=f"{where} AND NOT EXISTS"  # noqa: S608 - our statement, values in params
        " (SELECT 1 FROM ai_agents_message WHERE tenant_id = %s AND id = %s)",
        params=[*params, message.tenant_id, message.pk],
    )


def stand_in(*, agent: Agent, channel: str, thread_id: str) -> Conversation:
    """The conversation of a prepared message until its row is read (its id is a
    placeholder until then). Only the fields given here are set: the others are deferred,
    not given their ~40 defaults per message (`adopt` replaces them all)."""
    conversation: Conversation = _model(*_DEFERRED_ROW)
    conversation.__dict__.update(
        id=uuid.uuid4(),
        tenant_id=agent.tenant_id,
        channel=channel,
        channel_conversation_id=thread_id,
    )
    conversation.agent = agent
    # A row, not a new instance: saved (by whoever holds the stored message), only its loaded
    # fields are UPDATEd, and a placeholder id matches no row (DatabaseError), where
    # `adding` would INSERT it (after loading each deferred field: ~40 queries).
    conversation._state.adding = False
    conversation._state.db = DEFAULT_DB_ALIAS
    return conversation


_DEFERRED_ROW = (DEFERRED,) * len(Conversation._meta.concrete_fields)
_model: Any = Conversation  # positional (deferred) values: the stubs know keywords only


def adopt(conversation: Conversation, row: Conversation) -> None:
    """`conversation` (the stand-in, which the caller holds) becomes the row read: its field
    values, and its state (the cache of related rows included)."""
    values = row.__dict__
    conversation.__dict__.update(
        {
            name: values[name] if name in values else getattr(row, name)
            for name in (field.attname for field in Conversation._meta.concrete_fields)
        }
    )
    conversation._state = row._state


# The partial unique constraint `conv_one_open_per_thread` (its predicate, for ON CONFLICT).
_ONE_OPEN = (
    "ON CONFLICT (tenant_id, agent_id, channel, channel_conversation_id)"
    f" WHERE status IN ({_OPEN_SQL}) DO NOTHING"
)


def open_statements(
    *, agent: Agent, channel: str, thread_id: str, contact: Any, binding: Any
) -> list[rows.Statement]:
    """A new open conversation for the thread, linked to its previous (ended) one, unless one
    is open already: concurrent first messages meet the partial unique constraint and the
    loser inserts nothing (it waits for the winner's commit, so a `prepared_store_statement`
    after it finds the winner's row). Used in front of `prepared_store_statement` in one round
    trip: a refused message (a repeat) takes the new conversation with it. A `contact` not
    saved yet (a new sender) is inserted first, in the same round trip (unless a concurrent
    request inserted it: the conversation takes that one)."""
    adding = contact is not None and contact._state.adding
    conversation = new_conversation(
        agent=agent,
        channel=channel,
        thread_id=thread_id,
        contact=None if adding else contact,
        binding=binding,
    )
    if not adding:
        return [open_row_statement(conversation)]
    conversation.contact_identifier = contact.external_id
    return [
        contact_insert_statement(contact),
        open_row_statement(conversation, contact_external_id=contact.external_id),
    ]


def new_conversation(
    *, agent: Agent, channel: str, thread_id: str, contact: Any, binding: Any = None
) -> Conversation:
    """The thread's new conversation row (unsaved), as both ways of opening one build it
    (`open_statements` and `store.conversation_open`): its contact identifier is the contact's
    external id, or the thread's id when the sender has no contact."""
    return Conversation(
        tenant_id=agent.tenant_id,
        agent=agent,
        channel=channel,
        channel_conversation_id=thread_id,
        contact=contact,
        contact_identifier=contact.external_id if contact is not None else thread_id,
        binding=binding,
    )


def open_row_statement(
    conversation: Conversation, *, contact_external_id: str | None = None
) -> rows.Statement:
    """`open_statements` for a new (unsaved) conversation row: its `previous_conversation_id`
    is found by the statement (and its contact, by `contact_external_id`, when given)."""
    agent_id, channel = conversation.agent_id, conversation.channel
    thread_id = conversation.channel_conversation_id
    sql = (
        "WITH p AS (SELECT id FROM ai_agents_conversation WHERE tenant_id = %s AND agent_id = %s"  # noqa: S608
        f" AND channel = %s AND channel_conversation_id = %s AND status NOT IN ({_OPEN_SQL})"
        " ORDER BY started_at DESC LIMIT 1)"
    )
    params = [conversation.tenant_id, agent_id, channel, thread_id]
    columns = {"previous_conversation_id": "(SELECT id FROM p)"}
    if contact_external_id is not None:
        sql += ", k AS (SELECT id FROM ai_agents_contact WHERE tenant_id = %s AND external_id = %s)"
        params += [conversation.tenant_id, contact_external_id]
        columns["contact_id"] = "(SELECT id FROM k)"
    return rows.insert_select_statement(
        conversation,
        prefix=(sql, params),
        columns=columns,
        from_sql=_ONE_OPEN,
    )
