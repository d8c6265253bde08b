"""Sends a worker claimed and never finished: a message left "pending" because the worker died
between claiming its send and handing it to the channel (OOM kill, deploy, time limit).

A claim (`delivery_claimed_at`, set with "pending" in one UPDATE: conversations/delivery.py)
older than the longest a send can still be running is taken over by a conditional UPDATE
(two sweeps, or a sweep and a redelivered task, never both win) and its send is queued with the
new claim time as a token; the send checks the token in another conditional UPDATE, reads the
message and its conversation afresh (the handoff rule, the 24-hour window) and hands over only
the parts never handed over (the adapters skip a part already sent). A claim older than
`GIVE_UP` is marked failed instead, with its own reason for the staff to see.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, JSONField, Q, Value
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce
from django.utils import timezone

from ai_agents.channels import adapter_for
from ai_agents.conversations.delivery import bot_may_speak, claimed_send
from ai_agents.models import Delivery, Message
from ai_agents.services.inbox_events import inbox_event_publish
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

GIVE_UP = timedelta(hours=24)  # WhatsApp would refuse free text by then anyway
# Take-overs of one message before it is marked failed: a send that keeps failing after its
# POST (its result never saved) would otherwise reach the customer again at every sweep. For
# an outbound message `Message.attempts` counts these take-overs.
TAKEOVERS_MAX = 3
BATCH = 200  # claims taken over per sweep, oldest first
INTERRUPTED = "send_interrupted"
_PENDING = Delivery.Status.PENDING
_INTERRUPTED_NOTE = CombinedExpression(  # the reason the inbox shows beside the message
    F("metadata"),
    "||",
    Value(
        {"delivery_error": {"code": INTERRUPTED, "message": "send interrupted, not retried"}},
        JSONField(),
    ),
)
_OUTBOUND = Q(role=Message.Role.ASSISTANT) | Q(
    role=Message.Role.SYSTEM, metadata__has_key="customer_notice"
)


def _stale(before: datetime) -> Q:
    """Claimed before `before` (an old pending row without a claim time: created before)."""
    return Q(delivery_claimed_at__lt=before) | Q(
        delivery_claimed_at__isnull=True, created_at__lt=before
    )


def claims_sweep(*, stale_s: float, send: Callable[[str, str], Any]) -> int:
    """Takes over the sends claimed more than `stale_s` seconds ago (every tenant's, oldest
    first, at most BATCH) and queues each with `send(message_id, claim_token)`; gives up on
    those stored more than GIVE_UP ago or taken over TAKEOVERS_MAX times. Returns how many
    were queued."""
    now = timezone.now()
    stale = _stale(now - timedelta(seconds=stale_s))
    given_up = _give_up(now, stale)
    pending = Message.objects.unscoped().filter(
        _OUTBOUND,
        stale,
        delivery_status=_PENDING,
        created_at__gte=now - GIVE_UP,
        attempts__lt=TAKEOVERS_MAX,
    )
    candidates = list(
        pending.annotate(claimed=Coalesce("delivery_claimed_at", "created_at"))
        .order_by("claimed")
        .values_list("pk", flat=True)[:BATCH]
    )
    queued = 0
    for pk in candidates:
        token = timezone.now()  # also the new claim time: the send's own claim
        taken = pending.filter(pk=pk).update(delivery_claimed_at=token, attempts=F("attempts") + 1)
        if taken:  # this sweep's: no other sweep took it meanwhile
            send(str(pk), token.isoformat())
            queued += 1
    if queued or given_up:
        logger.warning("channel.claims_swept", extra={"queued": queued, "given_up": given_up})
    return queued


def _give_up(now: datetime, stale: Q) -> int:
    """Marks failed the stale claims of messages stored more than GIVE_UP ago or taken over
    TAKEOVERS_MAX times, and their parts never handed over. Returns how many messages."""
    done = Message.objects.unscoped().filter(
        Q(created_at__lt=now - GIVE_UP) | Q(attempts__gte=TAKEOVERS_MAX),
        _OUTBOUND,
        stale,
        delivery_status=_PENDING,
    )
    ids = list(done.values_list("pk", flat=True)[:BATCH])
    if not ids:
        return 0
    Delivery.objects.unscoped().filter(message_id__in=ids, status=_PENDING).update(
        status=Delivery.Status.FAILED, error_code=INTERRUPTED, status_at=now
    )
    given_up = done.filter(pk__in=ids)
    count = given_up.update(delivery_status=Delivery.Status.FAILED, metadata=_INTERRUPTED_NOTE)
    for tenant_id, conversation_id in set(given_up.values_list("tenant_id", "conversation_id")):
        inbox_event_publish(tenant_id=tenant_id, conversation_id=conversation_id, kind="delivery")
    return count


def claimed_reply_send(message_id: str, token: str) -> str:
    """Sends a message a sweep took over with claim time `token`, unless another sweep took it
    since (its claim time moved). Returns its delivery status ("" when it is not ours)."""
    tenant_id = (
        Message.objects.unscoped().filter(pk=message_id).values_list("tenant_id", flat=True).first()
    )
    if tenant_id is None:
        return ""
    with tenant_scope(tenant_id):
        claimed_at = datetime.fromisoformat(token)
        ours = Message.objects.filter(
            pk=message_id, delivery_status=_PENDING, delivery_claimed_at=claimed_at
        ).update(delivery_claimed_at=timezone.now())
        if not ours:
            return ""
        message = Message.objects.select_related("conversation__binding").get(pk=message_id)
        return _resend(message)


def _resend(message: Message) -> str:
    """The handoff rule on this fresh read, then the parts never handed over."""
    conversation = message.conversation
    messages = Message.objects.filter(pk=message.pk, delivery_status=_PENDING)
    adapter = adapter_for(conversation.channel)
    status: str
    if adapter is None or conversation.binding is None:  # the channel was removed meanwhile
        status = Delivery.Status.FAILED
        messages.update(delivery_status=status, metadata=_INTERRUPTED_NOTE)
    elif not bot_may_speak(conversation, message):
        status = Delivery.Status.SUPPRESSED
        messages.update(delivery_status=status)
    else:
        status = claimed_send(message, adapter=adapter)  # tells the inbox itself
        if status != _PENDING:
            logger.warning("channel.claim_resent", extra={"message_id": str(message.pk)})
            return status
        # parts the channel's bodies left out (the window closed): failed
        Delivery.objects.filter(message_id=message.pk, status=_PENDING).update(
            status=Delivery.Status.FAILED, error_code=INTERRUPTED, status_at=timezone.now()
        )
        status = Delivery.Status.FAILED
        messages.update(delivery_status=status, metadata=_INTERRUPTED_NOTE)
    inbox_event_publish(
        tenant_id=message.tenant_id, conversation_id=conversation.pk, kind="delivery"
    )
    logger.warning("channel.claim_resent", extra={"message_id": str(message.pk), "status": status})
    return status
