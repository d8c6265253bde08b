"""Accepting inbound channel messages: store first, answer on the real-time queue.

`inbound_clean` is the one place where what a customer sent (text, contact, ids, metadata)
is made storable: every channel, the REST API and the web chat build their `Inbound` and pass
it here (through `inbound_accept` or directly), so a NUL or a lone surrogate becomes U+FFFD and
the message is stored instead of failing with a 500 (see `erp.storable`).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace

from django.db import transaction

from ai_agents.models import ChannelBinding, Message
from ai_agents.pipeline.run import Inbound, message_receive
from erp.storable import storable, storable_text

logger = logging.getLogger(__name__)


def inbound_accept(
    *, binding: ChannelBinding, inbound: Inbound, answer: bool = True
) -> tuple[Message, bool]:
    """Stores the message (idempotent on `channel_message_id`) and, when it is new and needs an
    answer, queues `channel_conversation_answer` once the row is committed. Returns the message
    and whether it was new."""
    message, created = message_receive(
        agent=binding.agent, inbound=replace(inbound_clean(inbound), binding=binding), answer=answer
    )
    if created and answer:
        conversation_id = str(message.conversation_id)
        message_id = str(message.pk)
        transaction.on_commit(lambda: _enqueue(conversation_id, message_id))
    return message, created


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


def _enqueue(conversation_id: str, message_id: str) -> None:
    """After commit. If the broker is down the message is safe in the database and
    `channel_pending_sweep` queues it within a minute; the webhook still answers 200."""
    from ai_agents.tasks import channel_conversation_answer

    try:
        channel_conversation_answer.delay(conversation_id, message_id)
    except Exception:
        logger.exception(
            "channel.enqueue_failed",
            extra={"conversation_id": conversation_id, "message_id": message_id},
        )
