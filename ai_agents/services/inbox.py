"""The staff inbox's writes: read markers, assignment to a teammate, internal notes.

Notes are the team's only: stored in their own table (never a Message), so no channel, no
delivery task and no customer page ever sees them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.models import Conversation, ConversationNote, ConversationRead
from ai_agents.models.inbox import NOTE_MAX_CHARS
from ai_agents.services.handoff import InvalidReply, conversation_take
from ai_agents.services.inbox_events import conversation_changed
from erp.storable import unstorable, unstorable_message

logger = logging.getLogger(__name__)


def conversation_read_mark(*, conversation: Conversation, user: Any) -> None:
    """`user` has read the conversation up to now: its unread count drops to 0 for them."""
    ConversationRead.objects.for_tenant(conversation.tenant_id).bulk_create(
        [
            ConversationRead(
                tenant_id=conversation.tenant_id,
                conversation_id=conversation.pk,
                user_id=user.pk,
                last_read_at=timezone.now(),
            )
        ],
        update_conflicts=True,
        unique_fields=["conversation", "user"],
        update_fields=["last_read_at"],
    )


def conversation_assign(*, conversation: Conversation, assignee: Any, by: Any) -> Conversation:
    """`by` gives the conversation to `assignee` (a staff member of its tenant, checked by the
    caller): the assignee holds it under the tenant's lease, so nobody else may reply or claim
    until it ends. HandoffError subclasses as `conversation_take` raises them."""
    fresh = conversation_take(conversation, holder=assignee, acting=by)
    logger.info(
        "inbox.assigned",
        extra={"conversation_id": str(fresh.pk), "user_id": assignee.pk, "by": by.pk},
    )
    return fresh


def note_text_clean(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidReply(_("Escriba el texto de la nota."), field="text")
    if len(text) > NOTE_MAX_CHARS:
        raise InvalidReply(
            _("La nota admite como máximo %(n)s caracteres.") % {"n": NOTE_MAX_CHARS},
            field="text",
        )
    if unstorable(text):
        raise InvalidReply(unstorable_message(), field="text")
    return text.strip()


def conversation_note_add(
    *, conversation: Conversation, author: Any, text: Any
) -> ConversationNote:
    """Stores an internal note (any state, closed included); never sent to the customer."""
    clean = note_text_clean(text)
    note = ConversationNote.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id,
        conversation_id=conversation.pk,
        author=author,
        text=clean,
    )
    conversation_changed(conversation, "note")
    return note
