"""Staff inbox pages (Django session; tenant staff with a membership).

`/inbox/`, `/inbox/contacts/<id>`  the list and contact pages (`list_views.py`)
`/inbox/<id>`                 one conversation: messages and internal notes, claim / assign /
                              take over (owner/admin) / release / close, the reply and note
                              composer ("/" + shortcut inserts a canned reply)
`/inbox/<id>/events?after=`   what changed (state + messages since `after`), polled by the page

Actions go through the REST endpoints (`/api/v1/conversations/{id}/claim|takeover|assign|reply|
notes|release|close`, `/api/v1/canned-replies` and `.../render`)
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
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from ai_agents.inbox import labels
from ai_agents.inbox.alerts import alerts_texts
from ai_agents.inbox.state import (
    conversation_notes,
    conversation_state,
    conversation_teammates,
    message_row,
)
from ai_agents.inbox.window import window_texts
from ai_agents.models import Conversation, Message
from ai_agents.services import handoff
from ai_agents.services.inbox import conversation_read_mark
from ai_agents.services.typing import customer_typing
from ai_agents.services.whatsapp_templates import approved_templates, template_json
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


@require_GET
@staff_member_required
@ensure_csrf_cookie
def inbox_conversation(request: HttpRequest, conversation_id: Any) -> HttpResponse:
    conversation = _member_conversation(request, conversation_id)
    if handoff.conversation_lease_renew(conversation, request.user):
        conversation.refresh_from_db()
    # Opening it reads it: the list's unread badge for this member drops to 0.
    conversation_read_mark(conversation=conversation, user=request.user)
    messages = _messages(conversation)
    zone = labels.tenant_zone(conversation)
    context = {
        "conversation": conversation,
        "contact_name": labels.conversation_contact_name(conversation),
        "channel_label": labels.channel_label(conversation.channel),
        "channel_icon": labels.channel_icon(conversation.channel),
        "time_zone": str(zone),
        "state": conversation_state(conversation, request.user),
        "teammates": conversation_teammates(conversation, request.user),
        "timeline": _timeline([message_row(m, zone) for m in messages], conversation),
        "cursor": messages[-1].created_at.isoformat() if messages else "",
        "poll_seconds": POLL_SECONDS,
        "reply_max": handoff.REPLY_MAX_CHARS,
        "many_tenants": len(tenant_ids_for(request.user)) > 1,
        "i18n": _page_texts(),
        "alerts_i18n": alerts_texts(),
        "templates": [template_json(t) for t in approved_templates(conversation)],
        "window_i18n": window_texts(),
    }
    return render(request, "ai_agents/inbox/conversation.html", context)


def _timeline(rows: list[dict[str, Any]], conversation: Conversation) -> list[dict[str, Any]]:
    """Messages and internal notes in time order (a note has `"kind": "note"`)."""
    items = rows + conversation_notes(conversation)
    return sorted(items, key=lambda item: item["created_at"])


@require_GET
@staff_member_required
def inbox_events(request: HttpRequest, conversation_id: Any) -> JsonResponse:
    conversation = _member_conversation(request, conversation_id)
    after = _cursor(request.GET.get("after", ""))
    messages = _messages(conversation, after)
    zone = labels.tenant_zone(conversation)
    return JsonResponse(
        {
            "state": conversation_state(conversation, request.user),
            "customer_typing": customer_typing(conversation.pk),
            "messages": [message_row(m, zone) for m in messages],
            "notes": conversation_notes(conversation),
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
        "note": _("Nota interna"),
        "options": _("Opciones ofrecidas"),
        "holder_other": _("Atendida por %(name)s desde %(since)s (reservada hasta %(until)s)"),
        "holder_me": _("La atiende usted desde %(since)s (reservada hasta %(until)s)"),
        "customer": _("Cliente"),
        "bot": _("Bot"),
        "person": _("Equipo"),
        "unclaimed": _("Sin atender"),
        "network": _("No se pudo contactar con el servidor."),
        "empty": _("Escriba el texto de la respuesta."),
        "generic": _("Algo ha fallado."),
        "sent": _("Respuesta enviada."),
        "claimed": _("Conversación reclamada."),
        "taken_over": _("Ahora atiende usted la conversación."),
        "lost": _("%(name)s ha tomado el control: ya no puede responder."),
        "takeover_text": _("%(name)s dejará de poder responder; la conversación pasa a usted."),
        "released": _("Devuelta al bot."),
        "closed": _("Conversación cerrada."),
        "assigned": _("Conversación asignada a %(name)s."),
        "assigned_to_me": _("Asignada a usted: ya puede responder."),
        "note_saved": _("Nota interna guardada."),
        "note_empty": _("Escriba el texto de la nota."),
        "note_hint": _("Solo el equipo ve las notas internas: el cliente nunca las recibe."),
        "reply_label": _("Su respuesta"),
        "note_label": _("Nota interna (solo para el equipo)"),
        "send_reply": _("Responder"),
        "send_note": _("Guardar nota"),
        "canned_none": _("Ninguna respuesta guardada empieza así."),
        "canned_count": _("%(n)s respuestas guardadas: flechas para elegir, Intro para insertar."),
    }
