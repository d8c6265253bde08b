"""Accepting inbound channel messages: store first, answer on the real-time queue.

`inbound_clean` is the one place where what a customer sent (text, contact, ids, metadata)
is made storable: every channel, the REST API and the web chat build their `Inbound` and pass
it here (through `inbound_accept` or directly), so a NUL or a lone surrogate becomes U+FFFD and
the message is stored instead of failing with a 500 (see `erp.storable`).
"""

from __future__ import annotations

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


def inbound_clean(inbound: Inbound) -> Inbound:
    """`inbound` with every character PostgreSQL cannot store replaced by U+FFFD."""
    return replace(
        inbound,
        text=storable_text(inbound.text),
        contact=storable(dict(inbound.contact)),
        thread_id=storable(inbound.thread_id),
        channel_message_id=storable(inbound.channel_message_id),
        metadata=storable(dict(inbound.metadata)) if inbound.metadata is not None else None,
    )


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
