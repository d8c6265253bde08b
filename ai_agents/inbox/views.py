"""Staff inbox pages (Django session; tenant staff with a membership).

`/inbox/`, `/inbox/contacts/<id>`  the list and contact pages (`list_views.py`)
`/inbox/<id>`                 one conversation: messages, claim / release / close, reply form
`/inbox/<id>/events?after=`   what changed (state + messages since `after`), polled by the page

Actions go through the REST endpoints (`/api/v1/conversations/{id}/claim|reply|release|close`)
with the session, CSRF token and `X-Tenant`, so the page and integrations share one code path.
Opening a conversation renews the viewer's own lease; polling does not (a forgotten tab must
not keep a conversation forever).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from ai_agents.models import Conversation, Message
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.services import handoff
from erp.tenancy.selectors import tenant_ids_for

POLL_SECONDS = 3
# Messages are re-sent from a little before the client's cursor (a message committed late
# with an earlier timestamp is not lost); the page ignores ids it already shows.
EVENTS_OVERLAP = timedelta(seconds=30)


def _member_conversation(request: HttpRequest, conversation_id: Any) -> Conversation:
    """The conversation if it belongs to one of the user's tenants; 404 otherwise."""
    conversation = (
        Conversation.objects.unscoped()
        .select_related("assigned_to", "contact", "agent", "tenant")
        .filter(pk=conversation_id, tenant_id__in=tenant_ids_for(request.user))
        .first()
    )
    if conversation is None:
        raise Http404
    return conversation


def message_kind(message: Message) -> str:
    if message.role == Message.Role.USER:
        return "customer"
    return "person" if message.author_id is not None else "bot"


DELIVERY_LABELS = {
    "pending": gettext_lazy("Enviando…"),
    "sent": gettext_lazy("Enviado"),
    "delivered": gettext_lazy("Entregado"),
    "read": gettext_lazy("Leído"),
    "failed": gettext_lazy("No entregado"),
    "suppressed": gettext_lazy("No enviado: la conversación la atiende una persona"),
}


def delivery_label(message: Message) -> str:
    """What the staff see under an outbound message: its channel status and, when it failed,
    why (e.g. WhatsApp's 24-hour window). Empty for inbound and pulled channels."""
    status = message.delivery_status
    if not status:
        return ""
    label = str(DELIVERY_LABELS.get(status, status))
    if status == "failed":
        errors = [d.error_message for d in message.deliveries.all() if d.error_message]
        if errors:
            label = f"{label}: {errors[0]}"
    return label


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "id": str(message.pk),
        "kind": message_kind(message),
        "author": handoff.user_display_name(message.author) if message.author_id else "",
        "content": message.content,
        "created_at": message.created_at.isoformat(),
        "delivery_status": message.delivery_status,
        "delivery": delivery_label(message),
    }


def _messages(conversation: Conversation, after: datetime | None = None) -> list[Message]:
    rows = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation, role__in=[Message.Role.USER, Message.Role.ASSISTANT])
        .select_related("author")
        .prefetch_related("deliveries")
        .order_by("created_at", "id")
    )
    if after is not None:
        rows = rows.filter(created_at__gte=after - EVENTS_OVERLAP)
    return list(rows)


def conversation_state(conversation: Conversation, user: Any) -> dict[str, Any]:
    """What the page shows about the conversation besides its messages."""
    holder = handoff.conversation_holder(conversation)
    waiting = handoff.conversation_waiting_since(conversation)
    is_open = conversation.status in Conversation.OPEN_STATUSES
    mine = holder is not None and holder.user_id == user.pk
    escalation = conversation_escalation(conversation) or {}
    return {
        "id": str(conversation.pk),
        "status": conversation.status,
        "status_label": str(conversation.get_status_display()),
        "claimed": holder is not None,
        "holder": holder.name if holder else "",
        "holder_is_me": mine,
        "claim_expires_at": holder.until.isoformat() if holder and holder.until else None,
        "waiting_since": waiting.isoformat() if waiting else None,
        "escalation_reason": conversation.escalation_reason,
        "escalation_priority": conversation.escalation_priority,
        # What the page shows: words, never the codes above.
        "escalation": escalation,
        "reason_label": escalation.get("reason_label", ""),
        "priority_label": escalation.get("priority_label", ""),
        "can_claim": is_open and not mine,
        "can_reply": is_open and conversation.assigned_to_id == user.pk,
        "can_release": is_open and (holder is None or mine),
        "can_close": is_open and (holder is None or mine),
    }


@require_GET
@staff_member_required
@ensure_csrf_cookie
def inbox_conversation(request: HttpRequest, conversation_id: Any) -> HttpResponse:
    conversation = _member_conversation(request, conversation_id)
    if handoff.conversation_lease_renew(conversation, request.user):
        conversation.refresh_from_db()
    messages = _messages(conversation)
    context = {
        "conversation": conversation,
        "state": conversation_state(conversation, request.user),
        "messages": [(m, message_kind(m), delivery_label(m)) for m in messages],
        "cursor": messages[-1].created_at.isoformat() if messages else "",
        "poll_seconds": POLL_SECONDS,
        "reply_max": handoff.REPLY_MAX_CHARS,
        "i18n": _page_texts(),
    }
    return render(request, "ai_agents/inbox/conversation.html", context)


@require_GET
@staff_member_required
def inbox_events(request: HttpRequest, conversation_id: Any) -> JsonResponse:
    conversation = _member_conversation(request, conversation_id)
    after = _cursor(request.GET.get("after", ""))
    messages = _messages(conversation, after)
    return JsonResponse(
        {
            "state": conversation_state(conversation, request.user),
            "messages": [_message_row(m) for m in messages],
            "cursor": messages[-1].created_at.isoformat()
            if messages
            else (after and after.isoformat()),
        }
    )


def _cursor(raw: str) -> datetime | None:
    """The client's cursor (ISO time of the last message it shows); None when absent or bad
    (then every message comes back and the page skips those it has)."""
    try:
        after = parse_datetime(raw) if raw else None
    except ValueError:
        return None
    if after is not None and timezone.is_naive(after):
        after = timezone.make_aware(after, UTC)
    return after


def _page_texts() -> dict[str, str]:
    return {
        "customer": _("Cliente"),
        "bot": _("Bot"),
        "person": _("Equipo"),
        "claimed_by": _("Atendida por %(name)s hasta las %(time)s"),
        "claimed_by_me": _("La atiende usted hasta las %(time)s"),
        "unclaimed": _("Sin atender"),
        "network": _("No se pudo contactar con el servidor."),
        "empty": _("Escriba el texto de la respuesta."),
        "generic": _("Algo ha fallado."),
        "sent": _("Respuesta enviada."),
        "claimed": _("Conversación reclamada."),
        "released": _("Devuelta al bot."),
        "closed": _("Conversación cerrada."),
    }
