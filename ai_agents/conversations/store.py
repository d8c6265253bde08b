"""Every hand-written SQL statement of the conversation engine, in one place.

The engine reads a thread (contact, open conversation, latest messages, knowledge bases) in one
round trip (`thread_open`); the statements are built here so the engine's phases only name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from ai_agents.models import Agent, Contact, Conversation, KnowledgeBase, Message
from ai_agents.rules.input_bound import input_max_chars
from ai_agents.selectors.knowledge import agent_knowledge_bases_statement
from ai_agents.services.conversations import conversation_expire_if_idle
from erp.tenancy import rows


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
    history_sql, history_params = history_statement(
        tenant_id=agent.tenant_id,
        conversation_sql=(
            "(SELECT id FROM ai_agents_conversation WHERE tenant_id = %s AND "  # noqa: S608
            f"{conversation_where})"
        ),
        conversation_params=[agent.tenant_id, *conversation_params],
        limit=history_limit(agent.history),
        with_first=agent.history["truncation_strategy"] == "smart",
        max_chars=input_max_chars(channel),
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


def history_rows(
    *, conversation: Conversation, config: Mapping[str, Any], before: Any = None
) -> list[tuple[Any, str, str]]:
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
