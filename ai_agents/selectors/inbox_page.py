"""The staff inbox list page (`/inbox/`): one page of cards, the count of every tab and the
choices of the filters, read with the inbox's conversation selector
(`ai_agents.selectors.conversations`: the same filters, tabs and search as the API).

Pages are cut by a keyset cursor on the tab's ordering (the waiting tab: who has waited
longest first; the others: latest activity first), so "cargar más" neither repeats nor skips a
card when new conversations arrive at the top. Callers set the tenant scope.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from ai_agents.models import Agent, Conversation
from ai_agents.selectors.conversation_search import conversation_search_sets
from ai_agents.selectors.conversations import (
    TABS,
    ConversationFilters,
    FilterError,
    conversation_filters_parse,
    conversation_list,
    conversation_ordering,
)
from erp.tenancy.models import Membership, Tenant

DEFAULT_TAB = "waiting"
PAGE_SIZE = 25
PAGE_MAX = 200  # a refresh re-reads what the page shows, up to this many cards
CURSOR_MAX_CHARS = 200


@dataclass(frozen=True)
class InboxPage:
    filters: ConversationFilters
    cards: list[Conversation]
    counts: dict[str, int]
    next_cursor: str


def _cursor_encode(key: datetime, pk: uuid.UUID) -> str:
    raw = f"{key.isoformat()}|{pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_decode(raw: str) -> tuple[datetime, uuid.UUID]:
    """(sort key, id) of the last card shown; FilterError("after") when it is not ours."""
    error = FilterError("after", _("El enlace de «cargar más» no es válido; vuelva a la lista."))
    if len(raw) > CURSOR_MAX_CHARS:
        raise error
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
        key_text, pk_text = text.split("|")
        key = parse_datetime(key_text)
        pk = uuid.UUID(pk_text)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise error from None
    if key is None:
        raise error
    return key, pk


def _sort_key_field(filters: ConversationFilters) -> tuple[str, bool]:
    """(annotation or field, descending) of the tab's ordering's first term."""
    first = conversation_ordering(filters)[0]
    return first.lstrip("-"), first.startswith("-")


def _after(rows: QuerySet[Conversation], filters: ConversationFilters, raw: str) -> Any:
    key, pk = _cursor_decode(raw)
    field, descending = _sort_key_field(filters)
    op = "lt" if descending else "gt"
    return rows.filter(Q(**{f"{field}__{op}": key}) | Q(**{field: key, f"pk__{op}": pk}))


def inbox_filters_parse(
    params: Mapping[str, str], *, tenant_ids: tuple[int, ...]
) -> ConversationFilters:
    """The page's filters: the API's, with the waiting tab when none is asked for or the one
    asked for is not a tab (an old bookmark lands on the inbox, not on an error page)."""
    if params.get("tab", "").strip() not in ("", *TABS):
        params = {**{key: params.get(key, "") for key in params}, "tab": ""}
    filters = conversation_filters_parse(params, tenant_ids=tenant_ids)
    return filters if filters.tab else replace(filters, tab=DEFAULT_TAB)


def inbox_tab_counts(*, filters: ConversationFilters, user_id: int | None) -> dict[str, int]:
    """How many conversations each tab holds under the same filters and search: one query,
    the search's matches found once, each tab a hashed set of ids."""
    unsearched = replace(filters, q="")
    rows = Conversation.objects.filter(tenant_id__in=filters.tenant_ids)
    if filters.q:
        rows = rows.filter(conversation_search_sets(filters.q, tenant_ids=filters.tenant_ids))
    tabs = {
        tab: conversation_list(filters=replace(unsearched, tab=tab), user_id=user_id).values("pk")
        for tab in TABS
    }
    counts = rows.aggregate(**{tab: Count("pk", filter=Q(pk__in=ids)) for tab, ids in tabs.items()})
    return {tab: int(counts[tab] or 0) for tab in TABS}


def inbox_page_read(
    *,
    params: Mapping[str, str],
    tenant_ids: tuple[int, ...],
    user_id: int | None,
    limit: int = PAGE_SIZE,
) -> InboxPage:
    """One page of cards after `params["after"]` (FilterError on bad input)."""
    filters = inbox_filters_parse(params, tenant_ids=tenant_ids)
    rows = conversation_list(filters=filters, user_id=user_id)
    after = params.get("after", "").strip()
    if after:
        rows = _after(rows, filters, after)
    ordering = conversation_ordering(filters)
    found = list(rows.select_related("agent").order_by(*ordering)[: limit + 1])
    cards = found[:limit]
    next_cursor = ""
    if len(found) > limit:
        field, _descending = _sort_key_field(filters)
        last = cards[-1]
        next_cursor = _cursor_encode(getattr(last, field), last.pk)
    counts = inbox_tab_counts(filters=filters, user_id=user_id)
    return InboxPage(filters=filters, cards=cards, counts=counts, next_cursor=next_cursor)


def inbox_filter_choices(*, tenant_ids: tuple[int, ...]) -> dict[str, Any]:
    """What the filter selects offer: the tenants, their agents and staff members."""
    agents = (
        Agent.objects.filter(tenant_id__in=tenant_ids)
        .select_related("tenant")
        .order_by("name", "pk")
    )
    members = (
        Membership.objects.filter(tenant_id__in=tenant_ids)
        .select_related("user")
        .order_by("user__first_name", "user__email", "user_id")
    )
    people: dict[int, Any] = {}
    for membership in members:
        people.setdefault(membership.user_id, membership.user)
    tenants = Tenant.objects.filter(pk__in=tenant_ids).order_by("name", "pk")
    return {"agents": list(agents), "people": list(people.values()), "tenants": list(tenants)}


def contact_conversations(
    *, contact_id: uuid.UUID, tenant_id: int, user_id: int | None, limit: int
) -> tuple[list[Conversation], bool]:
    """The contact's conversations on every channel and in every state, latest activity first
    (at most `limit`; the flag says whether there were more)."""
    filters = conversation_filters_parse({"contact": str(contact_id)}, tenant_ids=(tenant_id,))
    rows = conversation_list(filters=filters, user_id=user_id).select_related("agent")
    found = list(rows.order_by(*conversation_ordering(filters))[: limit + 1])
    return found[:limit], len(found) > limit
