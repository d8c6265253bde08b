"""Staff inbox list and contact pages (Django session; tenant staff with a membership).

`/inbox/`                       every conversation of the member's tenants: tabs, filters, search
                                (all in the query string), cursor pages ("cargar más")
`/inbox/?fragment=cards&...`    the same cards as JSON-wrapped HTML (refresh and "cargar más")
`/inbox/contacts/<id>`          a contact and every conversation of theirs across channels

Cards are rendered on the server by one template (`inbox/_cards.html`), for the first load, the
refresh and the next pages alike.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET

from ai_agents.inbox.alerts import alerts_texts
from ai_agents.inbox.cards import cards_fields, tenant_zone, when
from ai_agents.models import Contact
from ai_agents.rules.inbox_labels import CHANNEL_LABELS, contact_display_name
from ai_agents.selectors.conversations import FilterError
from ai_agents.selectors.inbox_page import (
    PAGE_MAX,
    PAGE_SIZE,
    InboxPage,
    contact_conversations,
    inbox_filter_choices,
    inbox_page_read,
)
from erp.tenancy.scoping import tenant_scope
from erp.tenancy.selectors import pk_or_none, tenant_ids_for

REFRESH_SECONDS = 10
FILTER_KEYS = ("q", "channel", "agent", "assigned", "from", "to", "tenant")
CONTACT_CONVERSATIONS_MAX = 200

TAB_LABELS = {
    "waiting": _("Esperando respuesta"),
    "mine": _("Mías"),
    "unassigned": _("Sin asignar"),
    "bot": _("Con el bot"),
    "closed": _("Cerradas/expiradas"),
}
EMPTY_TEXTS = {
    "waiting": _("Ningún cliente espera respuesta ahora mismo."),
    "mine": _("No tiene ninguna conversación abierta asignada."),
    "unassigned": _("No hay conversaciones escaladas sin asignar."),
    "bot": _("El bot no está atendiendo ninguna conversación ahora mismo."),
    "closed": _("Todavía no hay conversaciones cerradas ni expiradas."),
}
FILTERED_EMPTY = _("Ninguna conversación coincide con la búsqueda o los filtros.")


def _limit(request: HttpRequest) -> int:
    raw = request.GET.get("limit", "")
    if raw.isdigit() and len(raw) <= 4:
        return max(1, min(int(raw), PAGE_MAX))
    return PAGE_SIZE


def _query(values: dict[str, str], **changes: str) -> str:
    merged = {k: v for k, v in {**values, **changes}.items() if v}
    return "?" + urlencode(merged) if merged else "?"


def _cards_html(
    request: HttpRequest,
    conversations: list[Any],
    many_tenants: bool,
    *,
    contact_links: bool = True,
) -> str:
    context = {
        "cards": cards_fields(conversations),
        "many_tenants": many_tenants,
        "contact_links": contact_links,  # not on the contact's own page
    }
    return render_to_string("ai_agents/inbox/_cards.html", context, request=request)


def _bad_request(request: HttpRequest, error: FilterError, tenant_ids: tuple[int, ...]) -> Any:
    # The API's error shape (ai_agents/api: validation_error naming the field).
    body = {
        "error": {
            "code": "validation_error",
            "message": error.message,
            "fields": {error.field: [error.message]},
            "field": error.field,
        }
    }
    if request.GET.get("fragment"):
        return JsonResponse(body, status=400)
    context = {
        "error": error.message,
        "has_tenant": bool(tenant_ids),
        "alerts_i18n": alerts_texts(),
    }
    return render(request, "ai_agents/inbox/list.html", context, status=400)


@require_GET
@staff_member_required
def inbox_list(request: HttpRequest) -> HttpResponse:
    tenant_ids = tuple(sorted(tenant_ids_for(request.user)))
    many = len(tenant_ids) > 1
    with tenant_scope(*tenant_ids):
        try:
            page = inbox_page_read(
                params=request.GET,
                tenant_ids=tenant_ids,
                user_id=request.user.pk,
                limit=_limit(request),
            )
        except FilterError as error:
            return _bad_request(request, error, tenant_ids)
        html = _cards_html(request, page.cards, many)
        if request.GET.get("fragment") == "cards":
            return JsonResponse({"html": html, "next": page.next_cursor, "counts": page.counts})
        choices = inbox_filter_choices(tenant_ids=tenant_ids)
    return render(
        request,
        "ai_agents/inbox/list.html",
        _list_context(request, page, html=html, choices=choices, many=many),
    )


def _list_context(
    request: HttpRequest, page: InboxPage, *, html: str, choices: dict[str, Any], many: bool
) -> dict[str, Any]:
    values = {k: request.GET.get(k, "").strip() for k in FILTER_KEYS}
    tab = page.filters.tab
    state = {**values, "tab": tab}
    filtered = any(values.values())
    return {
        "tab": tab,
        "values": values,
        "tabs": [
            {
                "code": code,
                "label": label,
                "count": page.counts.get(code, 0),
                "href": _query(values, tab=code),
            }
            for code, label in TAB_LABELS.items()
        ],
        "cards_html": html,
        "empty_text": FILTERED_EMPTY if filtered else EMPTY_TEXTS[tab],
        "is_empty": not page.cards,
        "next_cursor": page.next_cursor,
        "more_href": _query(state, after=page.next_cursor),
        "fragment_query": _query(state, fragment="cards")[1:],
        "filters_open": any(values[k] for k in FILTER_KEYS if k != "q"),
        "channels": list(CHANNEL_LABELS.items()),
        "agents": choices["agents"],
        "people": choices["people"],
        "tenants": choices["tenants"],
        "many_tenants": many,
        "has_tenant": bool(page.filters.tenant_ids),
        "refresh_seconds": REFRESH_SECONDS,
        "alerts_i18n": alerts_texts(),
    }


@require_GET
@staff_member_required
def inbox_contact(request: HttpRequest, contact_id: Any) -> HttpResponse:
    tenant_ids = tuple(sorted(tenant_ids_for(request.user)))
    pk = pk_or_none(Contact, contact_id)
    with tenant_scope(*tenant_ids):
        contact = (
            Contact.objects.filter(pk=pk, tenant_id__in=tenant_ids).select_related("tenant").first()
            if pk is not None
            else None
        )
        if contact is None:
            raise Http404
        conversations, truncated = contact_conversations(
            contact_id=contact.pk,
            tenant_id=contact.tenant_id,
            user_id=request.user.pk,
            limit=CONTACT_CONVERSATIONS_MAX,
        )
        context = {
            "contact": contact,
            "display_name": contact_display_name(contact, fallback_key=contact.pk),
            "since": when(contact.created_at, tenant_zone(contact.tenant.timezone)),
            "cards_html": _cards_html(
                request, conversations, len(tenant_ids) > 1, contact_links=False
            ),
            "is_empty": not conversations,
            "truncated": truncated,
            "limit": CONTACT_CONVERSATIONS_MAX,
            "many_tenants": len(tenant_ids) > 1,
        }
    return render(request, "ai_agents/inbox/contact.html", context)
