"""The WhatsApp Cloud API channel: accepting webhook batches, applying status updates, and the
outbound adapter (registered as "whatsapp").

Inbound: every message is stored with `inbound_accept` before the webhook answers 200 (Meta
never replays a lost webhook); the model runs later on the real-time queue. Redeliveries meet
the unique constraint on the message id. Outbound: text split at 4096 characters (one Delivery
per part), retries for throttling, and the 24-hour customer-service window (outside it only an
approved template may go, else the delivery is recorded as failed for the staff to see).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.channels.whatsapp.bindings import (
    CACHE_DOWN,
    UNREAD,
    binding_for_number,
    local_copy,
    local_generation,
)
from ai_agents.channels.whatsapp.bodies import (
    interactive_body,
    mark_read_body,
    template_body,
    text_body,
    text_split,
)
from ai_agents.channels.whatsapp.bot_template import bot_template_pick
from ai_agents.channels.whatsapp.charges import whatsapp_charge_record
from ai_agents.channels.whatsapp.graph import (
    TYPING_TIMEOUT,
    GraphClient,
    GraphResult,
    messages_post_with_retries,
)
from ai_agents.channels.whatsapp.offered import (
    offered_key,
    options_offered,
    options_offered_mark,
    post_cache_read,
)
from ai_agents.channels.whatsapp.options import options_bodies
from ai_agents.channels.whatsapp.payload import WaBatch, WaMessage, WaStatus, batch_parse
from ai_agents.channels.whatsapp.templates import message_template
from ai_agents.conversations.delivery import delivery_part, delivery_status_summary
from ai_agents.conversations.inbound import Inbound, answers_enqueue, inbound_accept
from ai_agents.conversations.option_reply import typed_option_pick
from ai_agents.models import ChannelBinding, Conversation, Delivery, Message
from ai_agents.rules.options import option_may_be_named
from ai_agents.rules.whatsapp_window import window_is_open
from ai_agents.services import inbox_events
from ai_agents.services.inbox_events import inbox_event_publish
from erp.db import connection_release, save_retried
from erp.local_mirror import MISSING

logger = logging.getLogger(__name__)

CHANNEL = "whatsapp"
OUTSIDE_WINDOW = "outside_24h_window"
# How long a status for a wamid we have not stored yet waits for it.
PARKED_SECONDS = 3600
# Status order: a status never moves a delivery backwards; failed is final.
_RANK = {"pending": 0, "sent": 1, "delivered": 2, "read": 3, "played": 3, "failed": 4}


# --- inbound -------------------------------------------------------------------------------


@dataclass
class WebhookOutcome:
    stored: int = 0
    duplicates: int = 0
    statuses: int = 0
    unrouted: int = 0
    errors: int = 0
    skipped: int = 0


def whatsapp_webhook_accept(payload: Any) -> WebhookOutcome:
    """Stores every message of the batch and applies every status. Unknown numbers are
    logged and skipped (Meta would otherwise retry for a week). What the POST tells Redis (the
    inbox events, the answers' tasks) goes in one round trip at the end."""
    with inbox_events.held():
        return _accept(batch_parse(payload))


def _accept(batch: WaBatch) -> WebhookOutcome:
    outcome = WebhookOutcome(skipped=batch.skipped, errors=len(batch.errors))
    bindings: dict[tuple[str, bool], ChannelBinding | None] = {}
    since = local_generation()  # before the cache read: what it finds may be kept locally
    local = {number: local_copy(number) for number in _numbers(batch)}  # key, copy: once
    read = _cache_read(batch, local)

    def binding_of(number: str, active: bool = True) -> ChannelBinding | None:
        if (number, active) not in bindings:
            cached = CACHE_DOWN if read is None else read.get(local[number][0], UNREAD)
            bindings[number, active] = binding_for_number(
                number, active=active, cached=cached, since=since, local=local[number]
            )
            if bindings[number, active] is None:
                logger.warning("whatsapp.unknown_number", extra={"phone_number_id": number})
        return bindings[number, active]

    answers: dict[str, str] = {}
    try:
        for item in batch.messages:
            binding = binding_of(item.phone_number_id)
            if binding is None:
                outcome.unrouted += 1
                continue
            _message, created = inbound_accept(
                binding=binding,
                inbound=_inbound(item, binding, offered=read),
                answer=item.answer,
                answers=answers,
            )
            if created:
                outcome.stored += 1
            else:
                outcome.duplicates += 1
    finally:
        # Once for the POST, after what it stored is committed; even when a later message
        # failed: Meta's retry finds the stored ones duplicates and would not queue them.
        answers_enqueue(answers)
    for status in batch.statuses:
        binding = binding_of(status.phone_number_id, active=False)
        if binding is None:
            outcome.unrouted += 1
        elif delivery_status_apply(binding=binding, status=status):
            outcome.statuses += 1
    for error in batch.errors:
        logger.warning(
            "whatsapp.webhook_error",
            extra={"phone_number_id": error.phone_number_id, "error_code": error.code},
        )
    if outcome.skipped:
        logger.warning("whatsapp.items_skipped", extra={"count": outcome.skipped})
    return outcome


def _numbers(batch: WaBatch) -> set[str]:
    return {m.phone_number_id for m in batch.messages} | {s.phone_number_id for s in batch.statuses}


def _cache_read(batch: WaBatch, local: dict[str, tuple[str, Any]]) -> dict[str, Any] | None:
    """The POST's one cache read (`post_cache_read`; none at all in the common case): the
    bindings of the numbers without a copy here (`local`: number -> key, copy)."""
    return post_cache_read(
        binding_keys={key for key, copy in local.values() if copy is MISSING},
        marker_keys={offered_key(_thread_of(item)) for item in batch.messages if _may_pick(item)},
    )


def _thread_of(item: WaMessage) -> str:
    # One thread per customer and business number (a tenant may have several numbers).
    return f"{item.phone_number_id}:{item.wa_id}"


def _may_pick(item: WaMessage) -> bool:
    """A text that may be "2" or a title typed in answer to the buttons or list we sent."""
    return item.type == "text" and option_may_be_named(item.text)


def _inbound(item: WaMessage, binding: ChannelBinding, *, offered: Any) -> Inbound:
    """`offered`: the POST's cache read (None: the cache is down)."""
    contact: dict[str, Any] = {"external_id": item.wa_id, "phone": f"+{item.wa_id}"}
    if item.name:
        contact["name"] = item.name
    thread_id = _thread_of(item)
    text, chosen = item.text, dict[str, str]()
    if _may_pick(item) and (
        offered is None
        or options_offered(offered.get(offered_key(thread_id)), binding_id=binding.pk)
    ):
        text, chosen = typed_option_pick(
            binding=binding, channel=CHANNEL, thread_id=thread_id, text=text
        )
    return Inbound(
        text=text,
        contact=contact,
        channel=CHANNEL,
        thread_id=thread_id,
        channel_message_id=item.message_id,
        metadata={**item.metadata, **chosen},
    )


def delivery_status_apply(*, binding: ChannelBinding, status: WaStatus) -> bool:
    """Moves the delivery with this wamid (in the binding's tenant) forward, never back, and
    refreshes its message's status. A wamid not (yet) ours is parked for `PARKED_SECONDS`: Meta
    may report "sent" before its answer to our POST, which carries the wamid, is stored; the
    send applies what was parked (`_parked_apply`). False when the wamid is unknown."""
    if status.status not in _RANK:
        return False
    if _status_move(binding.tenant_id, status):
        return True
    _status_park(binding.tenant_id, status)
    # The send may have stored the wamid and looked for parked statuses in between: look
    # again, so one of the two always sees the other (applying twice changes nothing).
    return _status_move(binding.tenant_id, status)


def _status_move(tenant_id: Any, status: WaStatus) -> bool:
    """False when no delivery of the tenant has this wamid."""
    rank = _RANK[status.status]
    new = Delivery.Status.READ if status.status == "played" else status.status
    with transaction.atomic():
        delivery = (
            Delivery.objects.for_tenant(tenant_id)
            .select_for_update()
            .filter(channel=CHANNEL, external_id=status.message_id)
            .first()
        )
        if delivery is None:
            return False
        if _RANK.get(delivery.status, 0) >= rank:
            return True  # stale or repeated: already there or further
        delivery.status = new
        delivery.status_at = _when(status.timestamp)
        fields = ["status", "status_at"]
        if new == Delivery.Status.FAILED:
            delivery.error_code = status.error_code[:40]
            delivery.error_message = status.error_message[:500]
            fields += ["error_code", "error_message"]
        delivery.save(update_fields=fields)
        _message_status_refresh(delivery.message_id, tenant_id, error=delivery)
        conversation_id = delivery.message.conversation_id
    inbox_event_publish(tenant_id=tenant_id, conversation_id=conversation_id, kind="delivery")
    return True


def _parked_key(tenant_id: Any, wamid: str, status: str) -> str:
    # One key per status kind: two statuses parked at once never overwrite each other.
    digest = hashlib.sha256(wamid.encode()).hexdigest()[:32]
    return f"wa-status:{tenant_id}:{digest}:{status}"


def _status_park(tenant_id: Any, status: WaStatus) -> None:
    try:
        cache.set(
            _parked_key(tenant_id, status.message_id, status.status),
            dataclasses.asdict(status),
            PARKED_SECONDS,
        )
    except Exception as exc:  # Redis down: the status is lost, the webhook still answers 200
        logger.warning("whatsapp.status_not_parked", extra={"error": type(exc).__name__})


def _parked_apply(tenant_id: Any, wamid: str) -> None:
    """Applies the statuses that arrived before this wamid was stored."""
    keys = [_parked_key(tenant_id, wamid, kind) for kind in _RANK]
    try:
        parked = cache.get_many(keys)
        if parked:
            cache.delete_many(list(parked))
    except Exception as exc:
        logger.warning("whatsapp.parked_unavailable", extra={"error": type(exc).__name__})
        return
    for data in sorted(parked.values(), key=lambda item: _RANK[item["status"]]):
        _status_move(tenant_id, WaStatus(**data))


def _message_status_refresh(message_id: Any, tenant_id: Any, *, error: Delivery | None) -> str:
    message = (
        Message.objects.for_tenant(tenant_id).select_for_update().filter(pk=message_id).first()
    )
    if message is None:
        return ""
    statuses = list(
        Delivery.objects.for_tenant(tenant_id)
        .filter(message_id=message_id)
        .values_list("status", flat=True)
    )
    summary = delivery_status_summary(statuses)
    message.delivery_status = summary
    fields = ["delivery_status"]
    if summary == Delivery.Status.FAILED and error is not None and error.error_code:
        message.metadata = {
            **(message.metadata or {}),
            "delivery_error": {"code": error.error_code, "message": error.error_message},
        }
        fields.append("metadata")
    message.save(update_fields=fields)
    return summary


def _when(timestamp: str) -> datetime:
    try:
        return datetime.fromtimestamp(int(timestamp), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return timezone.now()


# --- outbound ------------------------------------------------------------------------------


def recipient_of(conversation: Conversation) -> str:
    data = conversation.channel_data or {}
    return str(data.get("wa_id") or conversation.contact_identifier)


class WhatsAppAdapter:
    """The channel adapter (see `ai_agents.channels.ChannelAdapter`). Bot and staff replies
    both come here; it never raises for channel errors, it records them."""

    def client(self, binding: ChannelBinding) -> GraphClient:
        return GraphClient(access_token=binding.access_token)

    def typing(self, *, binding: Any, conversation: Any, inbound: Any) -> None:
        """Marks the customer's message read with the typing indicator (dismissed by the reply
        or after 25 s). Best effort: one attempt, failures only logged."""
        if not inbound.channel_message_id:
            return
        result = self.client(binding).messages_post(
            phone_number_id=binding.phone_number_id,
            body=mark_read_body(inbound.channel_message_id),
            timeout=TYPING_TIMEOUT,
        )
        if not result.ok:
            logger.info("whatsapp.typing_failed", extra={"error_code": result.error_code})

    def send(self, *, binding: Any, conversation: Any, message: Any) -> str:
        to = recipient_of(conversation)
        interactive = (message.metadata or {}).get("wa_interactive")
        chosen = message_template(message)
        if chosen is not None:  # a template chosen in the inbox or a follow-up: any time
            bodies = [template_body(to, chosen)]
        elif window_is_open(conversation) and isinstance(interactive, dict):
            bodies = [interactive_body(to, message.content, interactive)]
        elif window_is_open(conversation) and (
            with_options := options_bodies(to, message, text_split)
        ):
            bodies = with_options  # the answer's options: buttons or a list (options.py)
            options_offered_mark(
                binding_id=binding.pk, thread_id=conversation.channel_conversation_id
            )
        elif window_is_open(conversation):
            bodies = [text_body(to, part) for part in text_split(message.content)]
        else:  # the bot's template, if the synced rows say it is approved (bot_template.py)
            chosen, problem = bot_template_pick(binding)
            if chosen is None:
                return self._outside_window(conversation, message, problem=problem)
            bodies = [template_body(to, chosen)]
        client = self.client(binding)
        for part, body in enumerate(bodies):
            delivery = delivery_part(message, part, channel=CHANNEL)
            if delivery is None:
                break  # a send this slow was taken over by the sweep, which sends the rest
            if delivery.status != Delivery.Status.PENDING or delivery.external_id:
                continue  # already handed over by an earlier run
            connection_release()  # no connection held while Graph answers (and retries)
            result = messages_post_with_retries(
                client, phone_number_id=binding.phone_number_id, body=body
            )
            _delivery_record(delivery, result)
            if result.ok:
                whatsapp_charge_record(
                    delivery=delivery,
                    conversation=conversation,
                    binding=binding,
                    body=body,
                    category=str((chosen or {}).get("category") or ""),
                )
            else:
                logger.warning(
                    "whatsapp.send_failed",
                    extra={"message_id": str(message.pk), "error_code": result.error_code},
                )
                break  # later parts would read out of context
        with transaction.atomic():
            return _message_status_refresh(message.pk, message.tenant_id, error=_failed(message))

    def _outside_window(self, conversation: Any, message: Any, *, problem: str) -> str:
        """No free-form text after 24 h and no template the bot may send (`problem` says
        why): nothing attempted, recorded as failed with a clear code and reason, and the team
        is notified (e-mail / webhook of the handoff settings)."""
        from ai_agents.services.handoff import staff_notify

        text = "{} {}".format(
            _(
                "Han pasado más de 24 horas desde el último mensaje del cliente: WhatsApp solo "
                "permite enviar una plantilla aprobada."
            ),
            problem,
        )
        failed = {
            "status": Delivery.Status.FAILED,
            "error_code": OUTSIDE_WINDOW,
            "error_message": text[:500],
            "status_at": timezone.now(),
        }
        parts = Delivery.objects.for_tenant(message.tenant_id).filter(message=message)
        # A send taken over after part of it left (delivery_sweep.py): what left stays as it is.
        parts.filter(status=Delivery.Status.PENDING, external_id__isnull=True).update(**failed)
        if not parts.exists():
            parts.create(tenant_id=message.tenant_id, message=message, channel=CHANNEL, **failed)
        ids = {"conversation_id": str(conversation.pk), "message_id": str(message.pk)}
        logger.warning(
            "whatsapp.outside_window",
            extra={**ids, "staff_notice": True},
        )
        staff_notify(conversation, OUTSIDE_WINDOW, str(text))
        with transaction.atomic():
            return _message_status_refresh(message.pk, message.tenant_id, error=_failed(message))


def _delivery_record(delivery: Delivery, result: GraphResult) -> None:
    delivery.attempts = result.attempts
    delivery.status_at = timezone.now()
    if result.ok:
        delivery.status = Delivery.Status.SENT
        delivery.external_id = result.external_id or None
    else:
        delivery.status = Delivery.Status.FAILED
        delivery.error_code = result.error_code[:40]
        delivery.error_message = result.error_message[:500]
    # Retried: a wamid not stored would make the sweep send the part again (delivery_sweep.py).
    fields = ["attempts", "status_at", "status", "external_id", "error_code", "error_message"]
    save_retried(delivery, fields)
    if delivery.external_id:
        _parked_apply(delivery.tenant_id, delivery.external_id)


def _failed(message: Any) -> Delivery | None:
    return (
        Delivery.objects.for_tenant(message.tenant_id)
        .filter(message_id=message.pk, status=Delivery.Status.FAILED)
        .order_by("part")
        .first()
    )
