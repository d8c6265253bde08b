"""What the conversation page shows, as data: the header's facts, who holds it and what the
viewer may do, the teammates it can be assigned to, and the timeline rows (messages and
internal notes).

The same dictionaries feed the first render (template) and the page's updates (`events`)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from ai_agents.api.cards import note_json
from ai_agents.inbox import labels
from ai_agents.inbox.media import media_view
from ai_agents.models import Conversation, ConversationNote, Message
from ai_agents.rules.delivery_labels import delivery_text, failure_code
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.rules.options import options_of
from ai_agents.rules.whatsapp_window import window_closes_at, window_is_open
from ai_agents.services import handoff
from ai_agents.services.handoff_takeover import may_take_over
from erp.tenancy.models import Membership


def message_kind(message: Message) -> str:
    if message.role == Message.Role.USER:
        return "customer"
    return "person" if message.author_id is not None else "bot"


def delivery_label(message: Message) -> str:
    """What the staff see under an outbound message: its channel status and, when it failed,
    why (e.g. WhatsApp's 24-hour window). Empty for inbound and pulled channels."""
    if not message.delivery_status:
        return ""
    code = failure_code(message.deliveries.all(), message.metadata)
    return delivery_text(message.delivery_status, code)


def message_row(message: Message, zone: Any) -> dict[str, Any]:
    return {
        "id": str(message.pk),
        "kind": message_kind(message),
        "author": handoff.user_display_name(message.author) if message.author_id else "",
        "content": message.content,
        "created_at": message.created_at.isoformat(),
        "time": labels.time_text(message.created_at, zone),
        "time_title": labels.zone_title(message.created_at, zone),
        "delivery_status": message.delivery_status,
        "delivery": delivery_label(message),
        "media": media_view(message),
        # The choices a bot answer offered (ai_agents/rules/options.py): small chips under it.
        "options": [o["title"] for o in options_of(message.metadata)]
        if message.role == Message.Role.ASSISTANT
        else [],
    }


def conversation_notes(conversation: Conversation) -> list[dict[str, Any]]:
    """Internal notes in the contract's shape ({"kind": "note", "id", "text", "author":
    {"id", "name"}, "created_at"}), oldest first, with `time_title` (the zone of the time
    shown). `created_at` in UTC like the messages' rows: the page orders the timeline by
    comparing these strings."""
    zone = labels.tenant_zone(conversation)
    notes = (
        ConversationNote.objects.for_tenant(conversation.tenant_id)
        .filter(conversation_id=conversation.pk)
        .select_related("author")
        .order_by("created_at", "id")
    )
    return [
        {
            **note_json(n),
            "created_at": n.created_at.isoformat(),
            "time_title": labels.zone_title(n.created_at, zone),
        }
        for n in notes
    ]


def conversation_teammates(conversation: Conversation, user: Any) -> list[dict[str, Any]]:
    """Whom the conversation can be assigned to: the active staff members of ITS tenant (the
    assign endpoint accepts exactly these), the viewer first."""
    members = (
        Membership.objects.for_tenant(conversation.tenant_id)
        .filter(user__is_active=True, user__is_staff=True)
        .select_related("user")
        .order_by("user__first_name", "user__last_name", "user__email", "user_id")
    )
    people = [
        {
            "email": m.user.email,
            "name": handoff.user_display_name(m.user),
            "is_me": m.user_id == user.pk,
        }
        for m in members
        if m.user.email
    ]
    return sorted(people, key=lambda p: not p["is_me"])


def _holder_facts(conversation: Conversation, user: Any, zone: Any) -> dict[str, Any]:
    holder = handoff.conversation_holder(conversation)
    mine = holder is not None and holder.user_id == user.pk
    return {
        "claimed": holder is not None,
        "holder": holder.name if holder else "",
        "holder_is_me": mine,
        "holder_since": holder.since.isoformat() if holder and holder.since else None,
        "holder_since_text": labels.time_text(holder.since if holder else None, zone),
        "claim_expires_at": holder.until.isoformat() if holder and holder.until else None,
        # The lease's end says its zone in words ("10:20 UTC+1"); the line's title names it.
        "claim_expires_text": labels.time_zone_text(holder.until if holder else None, zone),
        "holder_title": labels.zone_title(holder.until, zone) if holder else "",
    }


def conversation_state(conversation: Conversation, user: Any) -> dict[str, Any]:
    """What the page shows about the conversation besides its timeline. A conversation a
    colleague holds can be neither claimed nor answered by the viewer until the lease ends."""
    zone = labels.tenant_zone(conversation)
    facts = _holder_facts(conversation, user, zone)
    waiting = handoff.conversation_waiting_since(conversation)
    is_open = conversation.status in Conversation.OPEN_STATUSES
    escalation = conversation_escalation(conversation) or {}
    rights = _rights(conversation, user, facts, is_open)
    return {
        "id": str(conversation.pk),
        "status": conversation.status,
        "status_label": str(conversation.get_status_display()),
        **facts,
        "waiting_since": waiting.isoformat() if waiting else None,
        "waiting_since_text": labels.time_text(waiting, zone),
        "waiting_since_title": labels.zone_title(waiting, zone) if waiting else "",
        "escalation_reason": conversation.escalation_reason,
        "escalation_priority": conversation.escalation_priority,
        # What the page shows: words, never the codes above.
        "escalation": escalation,
        "reason_label": escalation.get("reason_label", ""),
        "priority_label": escalation.get("priority_label", ""),
        **rights,
        "reply_why": _reply_why(rights, facts, is_open),
        # WhatsApp's 24-hour window (null elsewhere): the page counts down to it and offers
        # only templates once it passed.
        **_window_facts(conversation, zone),
    }


def _rights(
    conversation: Conversation, user: Any, facts: dict[str, Any], is_open: bool
) -> dict[str, Any]:
    """What the viewer may do on the page."""
    free_or_mine = not facts["claimed"] or facts["holder_is_me"]
    return {
        "can_claim": is_open and not facts["claimed"],
        # An owner/admin of ITS tenant may take it from the colleague who holds it.
        "can_take_over": is_open
        and facts["claimed"]
        and not facts["holder_is_me"]
        and may_take_over(conversation, user),
        # Giving it to a teammate: allowed while nobody else's lease runs (as a claim).
        "can_assign": is_open and free_or_mine,
        # The holder whose lease ran out may still answer (replying renews it) while nobody
        # else took it.
        "can_reply": is_open and conversation.assigned_to_id == user.pk,
        "can_release": is_open and free_or_mine,
        "can_close": is_open and free_or_mine,
    }


def _reply_why(rights: dict[str, Any], facts: dict[str, Any], is_open: bool) -> str:
    """Why the viewer may not reply, in words (the reply box's placeholder and hint; "" when
    they may): who holds it, and what the viewer can do instead."""
    if rights["can_reply"]:
        return ""
    if not is_open:
        return _("La conversación ya no está abierta: solo puede escribir notas internas.")
    if rights["can_claim"]:
        return _("Reclame la conversación para responder.")
    if rights["can_take_over"]:
        return _("La atiende %(name)s: deje una nota interna o tome el control.") % {
            "name": facts["holder"]
        }
    return _("La atiende %(name)s: solo puede dejar notas internas.") % {"name": facts["holder"]}


def _window_facts(conversation: Conversation, zone: Any) -> dict[str, Any]:
    closes = window_closes_at(conversation)
    return {
        "window_closes_at": closes.isoformat() if closes else None,
        "window_open": window_is_open(conversation),
        # The countdown is relative; its title gives the absolute end with its zone.
        "window_title": _("La ventana se cierra el %(time)s")
        % {"time": labels.time_zone_text(closes, zone)}
        if closes
        else "",
    }
