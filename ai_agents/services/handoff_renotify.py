"""RN-7 after an escalation: an escalated conversation nobody answers is brought back to the
team's attention every `HandoffSettings.renotify_minutes` (default 30; 0: never), at most
`RENOTIFY_MAX` times per wait; the last reminder says it is the last.

"Nobody answers": no valid claim stands and the customer still waits for a person (the
escalation, or their first message after the team's last reply: `conversation_waiting_since`).
A new wait (the team replied, the customer wrote again) starts the count again.

Beat runs `renotify_due` (`ai_agents.bulk_renotify_escalations`, schedule in erp/settings.py).
Each reminder is claimed by one conditional UPDATE on the count and time it was read with, so
two beat workers (or an overlapping run) never send the same reminder twice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from ai_agents.models import Conversation, HandoffSettings
from ai_agents.services.handoff import conversation_waiting_since, conversations_annotate_waiting
from ai_agents.services.handoff_notify import EVENT_RENOTIFY
from erp.celery import enqueue

logger = logging.getLogger(__name__)

DEFAULT_RENOTIFY_MINUTES = 30
RENOTIFY_MAX = 3
BATCH = 500


def _periods(tenant_ids: set[int]) -> dict[int, int]:
    """Each tenant's reminder period in minutes (the default when it has no settings row)."""
    configured = dict(
        HandoffSettings.objects.unscoped()
        .filter(tenant_id__in=tenant_ids)
        .values_list("tenant_id", "renotify_minutes")
    )
    return {t: int(configured.get(t, DEFAULT_RENOTIFY_MINUTES)) for t in tenant_ids}


def _candidates(now: datetime) -> list[Conversation]:
    """Escalated conversations no valid claim holds (all tenants: a maintenance task)."""
    held = Q(assigned_to__isnull=False, claim_expires_at__gt=now)
    rows = (
        Conversation.objects.unscoped()
        .filter(status=Conversation.Status.ESCALATED)
        .exclude(held)
        .select_related("tenant")
        .order_by("escalated_at", "pk")
    )
    return list(conversations_annotate_waiting(rows)[:BATCH])


def reminder_number(conversation: Conversation, now: datetime, period_min: int) -> int:
    """The number (1..RENOTIFY_MAX) of the reminder due now, or 0 when none is."""
    waiting = conversation_waiting_since(conversation)
    if period_min <= 0 or waiting is None:
        return 0
    last = conversation.renotified_at
    sent = conversation.renotify_count if last is not None and last >= waiting else 0
    if sent >= RENOTIFY_MAX:
        return 0
    since = last if sent else waiting
    if since is None or now - since < timedelta(minutes=period_min):
        return 0
    return sent + 1


def _claim(conversation: Conversation, number: int, now: datetime) -> bool:
    """Records reminder `number` unless another run did (or a person claimed it) since the
    row was read: one conditional UPDATE."""
    return bool(
        Conversation.objects.unscoped()
        .filter(
            pk=conversation.pk,
            status=Conversation.Status.ESCALATED,
            renotify_count=conversation.renotify_count,
        )
        .filter(
            Q(renotified_at=conversation.renotified_at)
            if conversation.renotified_at is not None
            else Q(renotified_at__isnull=True)
        )
        .exclude(Q(assigned_to__isnull=False, claim_expires_at__gt=now))
        .update(renotify_count=number, renotified_at=now)
    )


def reminder_text(conversation: Conversation, number: int, now: datetime) -> str:
    """What the reminder says, in the tenant's language."""
    waiting = conversation_waiting_since(conversation) or now
    minutes = max(1, int((now - waiting).total_seconds() // 60))
    with translation.override(conversation.tenant.language or settings.LANGUAGE_CODE):
        text = _(
            "Recordatorio %(n)s de %(max)s: el cliente espera a una persona desde hace "
            "%(minutes)s minutos y nadie ha atendido la conversación."
        ) % {"n": number, "max": RENOTIFY_MAX, "minutes": minutes}
        if number >= RENOTIFY_MAX:
            text += " " + _("Es el último recordatorio: no se volverá a avisar.")
    return text


def renotify_due(*, now: datetime | None = None) -> int:
    """Sends every reminder due now (the team's e-mail and webhook, through
    `ai_agents.handoff_staff_notify`). Returns how many were sent."""
    now = now or timezone.now()
    found = _candidates(now)
    periods = _periods({c.tenant_id for c in found})
    sent = 0
    for conversation in found:
        number = reminder_number(conversation, now, periods[conversation.tenant_id])
        if not number or not _claim(conversation, number, now):
            continue
        text = reminder_text(conversation, number, now)
        try:
            enqueue("ai_agents.handoff_staff_notify", str(conversation.pk), EVENT_RENOTIFY, text)
        except Exception:  # the broker is down: this reminder is lost, the next one is not
            logger.exception(
                "handoff.renotify_enqueue_failed", extra={"conversation_id": str(conversation.pk)}
            )
            continue
        logger.info(
            "handoff.renotified",
            extra={"conversation_id": str(conversation.pk), "reminder": number},
        )
        sent += 1
    return sent
