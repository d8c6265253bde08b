"""Human handoff: a staff member claims a conversation (an ownership lease), replies on its
channel, releases it back to the bot or closes it.

Every write is one conditional UPDATE, so two people acting at once never both win: the row
lock makes the second UPDATE re-read the first one's result and match nothing. While a person
holds a conversation (or it is escalated and waits for one) the bot stays silent; see
`ai_agents.conversations.delivery.bot_may_speak` and the pipeline's escalated branch.

A lease that ran out needs no sweeper: `claim_expires_at` in the past simply means "unclaimed"
(shown so in the inbox, claimable by anyone); the conversation stays escalated, so the bot keeps
quiet until somebody releases it, or it expires after 24 h idle (RN-7,
`ai_agents.services.conversations`; never while a claim runs). Nobody answering it brings
reminders to the team (`ai_agents.services.handoff_renotify`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, F, OuterRef, Q, QuerySet, Subquery, Value, When
from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.models import Conversation, HandoffSettings, Message
from ai_agents.rules.whatsapp_window import window_closes_at, window_is_open
from ai_agents.services import customer_notice
from ai_agents.services.inbox_events import conversation_changed
from ai_agents.services.stats_facts import staff_reply_updates
from erp.api.errors import ServiceError
from erp.celery import enqueue

logger = logging.getLogger(__name__)

DEFAULT_LEASE_MINUTES = 15
REPLY_MAX_CHARS = 4096
# A claim of a conversation the bot was still handling: it becomes escalated with this reason.
TAKEOVER_REASON = "staff_takeover"
PRIORITY_ORDER = {"urgent": 0, "high": 1, "medium": 2, "low": 3, "": 4}


class HandoffError(ServiceError):
    """Base of the handoff errors; `code` and `status` are what the REST API answers."""

    code = "handoff_error"
    status = 400


class ConversationClaimed(HandoffError):
    code = "conversation_claimed"
    status = 409


class ConversationClosed(HandoffError):
    code = "conversation_closed"
    status = 409


class NotHolder(HandoffError):
    code = "not_holder"
    status = 403


class InvalidReply(HandoffError):
    code = "validation_error"
    status = 400


class WindowClosed(HandoffError):
    code = "window_closed"
    status = 409


@dataclass(frozen=True)
class Holder:
    user_id: int | None
    name: str
    until: datetime | None
    since: datetime | None = None


# --- reads ---------------------------------------------------------------------------------


def lease_minutes(tenant_id: int) -> int:
    minutes = (
        HandoffSettings.objects.for_tenant(tenant_id)
        .values_list("claim_lease_minutes", flat=True)
        .first()
    )
    return int(minutes or DEFAULT_LEASE_MINUTES)


def user_display_name(user: Any) -> str:
    if user is None:
        return ""
    full = user.get_full_name() if hasattr(user, "get_full_name") else ""
    return str(full or getattr(user, "email", "") or user.get_username())


def claim_is_valid(conversation: Conversation, *, now: datetime | None = None) -> bool:
    """Somebody holds it and their lease still runs."""
    now = now or timezone.now()
    return (
        conversation.assigned_to_id is not None
        and conversation.claim_expires_at is not None
        and conversation.claim_expires_at > now
    )


def conversation_holder(conversation: Conversation) -> Holder | None:
    """Who holds the conversation under a valid lease, or None ("unclaimed")."""
    if not claim_is_valid(conversation):
        return None
    return Holder(
        user_id=conversation.assigned_to_id,
        name=user_display_name(conversation.assigned_to),
        until=conversation.claim_expires_at,
        since=conversation.claimed_at,
    )


def _holder_extra(conversation: Conversation) -> dict[str, Any]:
    holder = conversation_holder(conversation)
    return {
        "assigned_to": None if holder is None else {"id": holder.user_id, "name": holder.name},
        "claim_expires_at": None if holder is None or holder.until is None else holder.until,
    }


def conversations_annotate_waiting(rows: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """Adds what `conversation_waiting_since` needs in the same query (lists)."""
    human = Message.objects.unscoped().filter(conversation=OuterRef("pk"), author__isnull=False)
    last_human = human.order_by("-created_at").values("created_at")[:1]
    rows = rows.annotate(last_human_reply_at=Subquery(last_human))
    first_after = (
        Message.objects.unscoped()
        .filter(
            conversation=OuterRef("pk"),
            role=Message.Role.USER,
            created_at__gt=OuterRef("last_human_reply_at"),
        )
        .order_by("created_at")
        .values("created_at")[:1]
    )
    return rows.annotate(first_inbound_after_human=Subquery(first_after))


def conversation_waiting_since(conversation: Conversation) -> datetime | None:
    """Since when the customer waits for a person: the escalation, or their first message
    after the team's last reply. None when nobody is waiting (not escalated, or answered)."""
    if conversation.status != Conversation.Status.ESCALATED:
        return None
    if not hasattr(conversation, "last_human_reply_at"):
        annotated = conversations_annotate_waiting(
            Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk)
        ).first()
        if annotated is None:
            return None
        conversation.last_human_reply_at = annotated.last_human_reply_at  # type: ignore[attr-defined]  # a per-instance cache
        conversation.first_inbound_after_human = annotated.first_inbound_after_human  # type: ignore[attr-defined]  # a per-instance cache
    last_human = conversation.last_human_reply_at  # type: ignore[attr-defined]  # set above or by the annotating query
    escalated_at = conversation.escalated_at
    if last_human is None or (escalated_at is not None and last_human < escalated_at):
        return escalated_at or conversation.last_inbound_at
    return conversation.first_inbound_after_human  # type: ignore[attr-defined]  # set above or by the annotating query


def inbox_conversations(tenant_ids: list[int]) -> list[Conversation]:
    """Escalated conversations (claimed or not) of these tenants: most urgent first, then
    whoever has waited longest."""
    rows = conversations_annotate_waiting(
        Conversation.objects.unscoped()
        .filter(tenant_id__in=tenant_ids, status=Conversation.Status.ESCALATED)
        .select_related("assigned_to", "contact", "agent", "tenant")
    )
    found = list(rows[:500])
    far = timezone.now() + timedelta(days=3650)
    found.sort(
        key=lambda c: (
            PRIORITY_ORDER.get(c.escalation_priority, 4),
            conversation_waiting_since(c) or far,
        )
    )
    return found


# --- writes --------------------------------------------------------------------------------


def _rows(conversation: Conversation) -> QuerySet[Conversation]:
    return Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk)


def _reload(conversation: Conversation) -> Conversation:
    fresh = _rows(conversation).select_related("assigned_to").first()
    if fresh is None:
        raise ConversationClosed(_("La conversación ya no existe."))
    return fresh


def _closed_error(conversation: Conversation) -> ConversationClosed:
    return ConversationClosed(
        _("La conversación está cerrada."), status_value=str(conversation.status)
    )


def free_or_mine(user: Any, now: datetime) -> Q:
    """No valid lease in the way: nobody's, `user`'s (a user or its id), or it ran out."""
    return (
        Q(assigned_to__isnull=True)
        | Q(assigned_to=user)
        | Q(claim_expires_at__isnull=True)
        | Q(claim_expires_at__lte=now)
    )


def conversation_claim(conversation: Conversation, user: Any) -> Conversation:
    """Takes the conversation for `user` until now + the tenant's lease. An active one becomes
    escalated (a person may take over from the bot at any time). Raises ConversationClaimed
    when someone else's lease still runs, ConversationClosed when it is over."""
    return conversation_take(conversation, holder=user, acting=user)


def conversation_take(conversation: Conversation, *, holder: Any, acting: Any) -> Conversation:
    """`acting` gives the conversation to `holder` (themself: a claim; a teammate: an
    assignment) under a new lease. Allowed when nobody else's lease runs (free, expired, held
    by `acting` or already by `holder`). `claimed_at` says since when `holder` holds it."""
    now = timezone.now()
    until = now + timedelta(minutes=lease_minutes(conversation.tenant_id))
    was_active = Q(status=Conversation.Status.ACTIVE)
    kept = Q(assigned_to=holder, claim_expires_at__gt=now, claimed_at__isnull=False)
    updated = (
        _rows(conversation)
        .filter(status__in=Conversation.OPEN_STATUSES)
        .filter(free_or_mine(acting, now) | Q(assigned_to=holder))
        .update(
            assigned_to=holder,
            escalated_to=holder,  # the person the escalation went to (kept after a release)
            claim_expires_at=until,
            claimed_at=Case(When(kept, then=F("claimed_at")), default=Value(now)),
            status=Value(Conversation.Status.ESCALATED),
            escalated_at=Case(When(was_active, then=Value(now)), default=F("escalated_at")),
            escalation_reason=Case(
                When(was_active, then=Value(TAKEOVER_REASON)), default=F("escalation_reason")
            ),
            escalation_priority=Case(
                When(Q(escalation_priority=""), then=Value("medium")),
                default=F("escalation_priority"),
            ),
        )
    )
    fresh = _reload(conversation)
    if updated:
        logger.info(
            "handoff.claimed",
            extra={
                "conversation_id": str(fresh.pk),
                "user_id": holder.pk,
                "by": acting.pk,
                "until": str(until),
            },
        )
        _customer_side(fresh, customer_notice.CLAIM, "assignment")
        return fresh
    if fresh.status not in Conversation.OPEN_STATUSES:
        raise _closed_error(fresh)
    raise ConversationClaimed(
        _("%(name)s atiende esta conversación.") % {"name": user_display_name(fresh.assigned_to)},
        **_holder_extra(fresh),
    )


def conversation_lease_renew(conversation: Conversation, user: Any) -> bool:
    """Staff activity (a reply, opening the conversation) extends the holder's lease. Only the
    holder's own lease; True when it was renewed."""
    until = timezone.now() + timedelta(minutes=lease_minutes(conversation.tenant_id))
    renewed = (
        _rows(conversation)
        .filter(status__in=Conversation.OPEN_STATUSES, assigned_to=user)
        .update(claim_expires_at=until)
    )
    if renewed:
        conversation.claim_expires_at = until
    return bool(renewed)


def reply_text_clean(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidReply(_("Escriba el texto de la respuesta."), field="text")
    if len(text) > REPLY_MAX_CHARS:
        raise InvalidReply(
            _("La respuesta admite como máximo %(n)s caracteres.") % {"n": REPLY_MAX_CHARS},
            field="text",
        )
    return text.strip()


def conversation_reply(conversation: Conversation, user: Any, text: Any) -> Message:
    """The holder's reply, stored and sent (`staff_message_store`). WindowClosed on WhatsApp
    outside the 24-hour window: nothing stored or sent (only a template may go)."""
    text = reply_text_clean(text)
    if not window_is_open(conversation):
        raise WindowClosed(
            _("La ventana de 24 horas está cerrada: envía una plantilla aprobada."),
            window_closes_at=window_closes_at(conversation),
        )
    return staff_message_store(conversation, user, content=text, metadata={"human": True})


def staff_message_store(
    conversation: Conversation,
    user: Any,
    *,
    content: str,
    metadata: dict[str, Any],
    within: Callable[[Message], None] | None = None,
) -> Message:
    """Stores a staff message if `user` holds the open conversation (lease renewed; NotHolder,
    ConversationClosed), runs `within(message)` in its transaction, sends it once committed."""
    now = timezone.now()
    until = now + timedelta(minutes=lease_minutes(conversation.tenant_id))
    with transaction.atomic():
        held = (
            _rows(conversation)
            .filter(status__in=Conversation.OPEN_STATUSES, assigned_to=user)
            .update(
                claim_expires_at=until,
                message_count=F("message_count") + 1,
                last_message_at=now,
                **staff_reply_updates(now),
            )
        )
        if not held:
            fresh = _reload(conversation)
            if fresh.status not in Conversation.OPEN_STATUSES:
                raise _closed_error(fresh)
            raise NotHolder(
                _("Reclame la conversación antes de responder."), **_holder_extra(fresh)
            )
        message = Message.objects.for_tenant(conversation.tenant_id).create(
            tenant_id=conversation.tenant_id,
            conversation_id=conversation.pk,
            agent_id=conversation.agent_id,
            role=Message.Role.ASSISTANT,
            content=content,
            author=user,
            metadata=metadata,
            created_at=now,
        )
        if within is not None:
            within(message)
        message_id = str(message.pk)
        if conversation.binding_id is not None:
            # The task sends on pushing channels (WhatsApp, e-mail) and returns at once for the
            # web chat, whose page reads the stored message like the REST API's clients do.
            transaction.on_commit(lambda: enqueue("ai_agents.handoff_reply_deliver", message_id))
        conversation_changed(conversation, "message")
    logger.info(
        "handoff.replied",
        extra={"conversation_id": str(conversation.pk), "message_id": message_id},
    )
    return message


def _holder_or_unclaimed(user: Any, now: datetime) -> Q:
    """Release and close: the holder, or anyone when no valid lease stands in the way."""
    return free_or_mine(user, now)


def conversation_release(conversation: Conversation, user: Any) -> Conversation:
    """Hands the conversation back to the bot: active, nobody holds it. The escalation fields
    stay for history; the customer's next message is answered by the bot."""
    now = timezone.now()
    updated = (
        _rows(conversation)
        .filter(status__in=Conversation.OPEN_STATUSES)
        .filter(_holder_or_unclaimed(user, now))
        .update(
            status=Conversation.Status.ACTIVE,
            assigned_to=None,
            claim_expires_at=None,
            claimed_at=None,
        )
    )
    fresh = _reload(conversation)
    if updated:
        logger.info(
            "handoff.released", extra={"conversation_id": str(fresh.pk), "user_id": user.pk}
        )
        _customer_side(fresh, customer_notice.RELEASE, "status")
        return fresh
    if fresh.status not in Conversation.OPEN_STATUSES:
        raise _closed_error(fresh)
    raise NotHolder(_("Otra persona atiende esta conversación."), **_holder_extra(fresh))


def conversation_close(conversation: Conversation, user: Any) -> Conversation:
    """Ends the conversation (the contact's next message starts a new one). The person who
    closed it stays in `assigned_to`; the lease ends."""
    now = timezone.now()
    updated = (
        _rows(conversation)
        .filter(status__in=Conversation.OPEN_STATUSES)
        .filter(_holder_or_unclaimed(user, now))
        .update(
            status=Conversation.Status.CLOSED,
            closed_at=now,
            assigned_to=user,
            claim_expires_at=None,
            claimed_at=None,
        )
    )
    fresh = _reload(conversation)
    if updated:
        logger.info("handoff.closed", extra={"conversation_id": str(fresh.pk), "user_id": user.pk})
        _customer_side(fresh, customer_notice.CLOSE, "status")
        return fresh
    if fresh.status not in Conversation.OPEN_STATUSES:
        raise _closed_error(fresh)
    raise NotHolder(_("Otra persona atiende esta conversación."), **_holder_extra(fresh))


def _customer_side(conversation: Conversation, event: str, kind: str) -> None:
    """After a change: the customer's notice (once per event) and the staff pages' event. A
    notice that cannot be posted never undoes what the person did (logged)."""
    try:
        customer_notice.customer_notice_post(conversation=conversation, event=event)
    except Exception:
        logger.exception("handoff.customer_notice_failed", extra={"event": event})
    conversation_changed(conversation, kind)


# --- notifications -------------------------------------------------------------------------


def staff_notify(conversation: Conversation, event: str, text: str = "") -> None:
    """Tells the tenant's team about `event` on this conversation (e-mail to the handoff
    recipients and the optional signed webhook), once the current transaction commits. The
    escalation task uses it; channels call it for failures a person must handle (e.g. a
    WhatsApp reply refused outside the 24-hour window)."""
    conversation_id, event_name, note = str(conversation.pk), event, text

    transaction.on_commit(
        lambda: enqueue("ai_agents.handoff_staff_notify", conversation_id, event_name, note)
    )
