"""What tells a person that a customer is waiting, and how they want to be told.

`GET /inbox/waiting`        {"count", "conversations": [{"id", "contact", "channel_label",
                            "reason_label", "tenant", "url", "alert", "since"}]} (`waiting_rows`'s
                            WAITING_SHOWN of them): the list's "Esperando respuesta"
                            tab without filters (the customer's last word unanswered by a
                            person, held or not): the page's title count, equal to the tab's
                            badge; a new id is a browser notification / sound when asked for,
                            unless a colleague holds it (`alert` false)
`GET|POST /inbox/preferences`  {"notify_desktop": bool, "notify_sound": bool}: the member's own
                            choice (per person); a bad body is a 400 JSON error
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import BooleanField, Case, Value, When
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from ai_agents.inbox import labels
from ai_agents.models import Conversation, InboxPreference
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.selectors.conversations import ConversationFilters, conversation_list
from ai_agents.services.handoff import free_or_mine
from erp.tenancy.scoping import tenant_scope
from erp.tenancy.selectors import tenant_ids_for

WAITING_SHOWN = 20
# `for_me` annotated in waiting_rows; `waiting_key` by conversation_list's waiting tab
_NEWEST_FOR_ME = ("-for_me", "-waiting_key", "-id")
PREFERENCE_FIELDS = ("notify_desktop", "notify_sound")
MAX_BODY = 1000


def waiting_rows(tenant_ids: list[int], *, user_id: Any) -> tuple[int, list[Conversation]]:
    """How many conversations the waiting tab holds (what a person must act on: a claim alone
    answers nobody), and the WAITING_SHOWN a new alert can come from: the ones that alert
    this person first (`for_me`: no valid lease of a colleague in the way), those that
    started waiting most recently first. So a conversation that starts waiting is listed
    however many wait longer, and one whose colleague's lease ran out ahead of colleagues'
    (not ahead of twenty newer ones for this person). Callers set the tenant scope."""
    filters = ConversationFilters(tenant_ids=tuple(sorted(tenant_ids)), tab="waiting")
    rows = conversation_list(filters=filters, user_id=None)
    for_me = When(free_or_mine(user_id, timezone.now()), then=Value(True))
    shown = rows.annotate(
        for_me=Case(for_me, default=Value(False), output_field=BooleanField())
    ).order_by(*_NEWEST_FOR_ME)
    return rows.count(), list(shown[:WAITING_SHOWN])


@require_GET
@staff_member_required
def inbox_waiting(request: HttpRequest) -> JsonResponse:
    tenant_ids = tenant_ids_for(request.user)
    with tenant_scope(*tenant_ids):
        count, rows = waiting_rows(tenant_ids, user_id=request.user.pk)
        body = _waiting_body(count, rows)
    return JsonResponse(body)


def _waiting_body(count: int, rows: list[Conversation]) -> dict[str, Any]:
    """`alert` on a row: a notification / sound is for this person (nobody holds it, or they
    do), not for a colleague's conversation (it still counts: the tab shows it). `since`:
    when it started waiting (UTC, fixed width: the page compares them as strings)."""
    return {
        "count": count,
        "conversations": [
            {
                "id": str(c.pk),
                "contact": labels.conversation_contact_name(c),
                "channel_label": labels.channel_label(c.channel),
                "reason_label": (conversation_escalation(c) or {}).get("reason_label", ""),
                "tenant": {"id": c.tenant_id, "name": c.tenant.name},
                "url": reverse("inbox-conversation", args=[c.pk]),
                "alert": c.for_me,  # type: ignore[attr-defined]  # annotated in waiting_rows
                "since": _utc(c.waiting_key),  # type: ignore[attr-defined]  # the waiting tab's
            }
            for c in rows
        ],
    }


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def alerts_texts() -> dict[str, str]:
    """The texts `inbox_alerts.js` shows (context `alerts_i18n` of every inbox page)."""
    return {
        "new_waiting": _("Un cliente espera a una persona: %(name)s (%(channel)s)"),
        "notification_title": _("Cliente esperando"),
        "saved": _("Preferencias guardadas."),
        "denied": _("El navegador tiene bloqueados los avisos de esta página."),
        "error": _("No se pudieron guardar las preferencias."),
    }


def preferences_of(user: Any) -> dict[str, bool]:
    found = InboxPreference.objects.filter(user=user).first()
    return {name: bool(found and getattr(found, name)) for name in PREFERENCE_FIELDS}


def _error(message: str, field: str = "") -> JsonResponse:
    body = {"error": {"code": "invalid", "message": message, "field": field}}
    return JsonResponse(body, status=400)


@require_http_methods(["GET", "POST"])
@staff_member_required
def inbox_preferences(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse(preferences_of(request.user))
    if len(request.body) > MAX_BODY:
        return _error(_("La petición es demasiado grande."))
    try:
        data = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        return _error(_("El cuerpo no es JSON válido."))
    if not isinstance(data, dict) or not data:
        return _error(_("Envíe un objeto JSON con notify_desktop y/o notify_sound."))
    for name, value in data.items():
        if name not in PREFERENCE_FIELDS:
            return _error(_("Campo desconocido: %(name)s.") % {"name": name[:40]}, name[:40])
        if not isinstance(value, bool):
            return _error(_("%(name)s debe ser true o false.") % {"name": name}, name)
    user: Any = request.user
    InboxPreference.objects.update_or_create(user=user, defaults=data)
    return JsonResponse(preferences_of(request.user))
