"""Taking over: an owner or admin of the conversation's tenant takes a conversation a colleague
holds, without waiting for the colleague's lease to end (a claim would answer 409).

The right is per object: the acting member's role in the conversation's own tenant (a person
may own one tenant and be an agent in another). The lease moves in one transaction that locks
the row, so the previous holder is known exactly and two take-overs never both win. The team
sees it in the timeline as an internal note ("X tomó el control (antes: Y)"), never sent to the
customer, and the previous holder's open page loses the reply box on its next update (the
`assignment` inbox event).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.models import Conversation, ConversationNote
from ai_agents.services import handoff
from ai_agents.services.inbox_events import conversation_changed
from erp.tenancy.models import Membership

logger = logging.getLogger(__name__)

MANAGER_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)


class NotAllowed(handoff.HandoffError):
    code = "not_allowed"
    status = 403


def may_take_over(conversation: Conversation, user: Any) -> bool:
    """The member is an owner or admin of the conversation's tenant (not of another one)."""
    if user is None or not getattr(user, "pk", None):
        return False
    return (
        Membership.objects.for_tenant(conversation.tenant_id)
        .filter(user_id=user.pk, role__in=MANAGER_ROLES)
        .exists()
    )


def conversation_takeover(conversation: Conversation, user: Any) -> Conversation:
    """Moves the lease to `user` (owner/admin of the conversation's tenant; NotAllowed else).
    Held by nobody else (free, expired or already theirs): a plain claim. ConversationClosed
    when it is over."""
    if not may_take_over(conversation, user):
        raise NotAllowed(
            _("Solo el propietario o un administrador de la empresa puede tomar el control.")
        )
    previous = _take_over_or_claim(conversation, user)
    if previous is not None:
        logger.info(
            "handoff.taken_over",
            extra={"conversation_id": str(conversation.pk), "user_id": user.pk, "from": previous},
        )
    return (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .select_related("assigned_to")
        .get(pk=conversation.pk)
    )


def _take_over_or_claim(conversation: Conversation, user: Any) -> int | None:
    """Moves the lease when a colleague holds it and returns their id; None after a plain
    claim. A colleague may claim between the locked read (free) and the claim: the claim then
    answers ConversationClaimed and the take-over is tried once more, now with a holder."""
    for attempt in (1, 2):
        with transaction.atomic():
            previous = _other_holder_locked(conversation, user)
            if previous is not None:
                _lease_move(conversation, user)
                _note_add(conversation, user, previous)
                conversation_changed(conversation, "assignment")
                return previous
        try:
            handoff.conversation_claim(conversation, user)
            return None
        except handoff.ConversationClaimed:
            if attempt == 2:
                raise
    return None  # pragma: no cover - the loop returns or raises


def _other_holder_locked(conversation: Conversation, user: Any) -> int | None:
    """Locks the row (until the transaction ends) and returns whose live lease stands in the
    way: another member's id, or None."""
    row = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk)
        .select_for_update()
        .values("status", "assigned_to_id", "claim_expires_at")
        .first()
    )
    if row is None:
        raise handoff.ConversationClosed(_("La conversación ya no existe."))
    if row["status"] not in Conversation.OPEN_STATUSES:
        raise handoff.ConversationClosed(
            _("La conversación está cerrada."), status_value=str(row["status"])
        )
    holder, until = row["assigned_to_id"], row["claim_expires_at"]
    if holder is None or holder == user.pk or until is None or until <= timezone.now():
        return None
    return int(holder)


def _lease_move(conversation: Conversation, user: Any) -> None:
    now = timezone.now()
    until = now + timedelta(minutes=handoff.lease_minutes(conversation.tenant_id))
    Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk).update(
        assigned_to=user,
        escalated_to=user,
        claim_expires_at=until,
        claimed_at=now,
        status=Conversation.Status.ESCALATED,
    )


def _note_add(conversation: Conversation, user: Any, previous_id: int) -> None:
    """The timeline's trace of the take-over, in the team's notes (never sent)."""
    previous = get_user_model().objects.filter(pk=previous_id).first()
    text = _("%(name)s tomó el control (antes: %(previous)s)") % {
        "name": handoff.user_display_name(user),
        "previous": handoff.user_display_name(previous),
    }
    ConversationNote.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, author=user, text=text
    )
