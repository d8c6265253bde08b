"""The inbox's conversation list: filters, tabs, search and what each card needs.

`conversation_filters_parse` turns query parameters into `ConversationFilters` (or raises
`FilterError` naming the parameter, in words); `conversation_list` returns the queryset, with
the annotations the card JSON reads (`unread_count`, `last_message_preview`, the waiting
time). Callers set the tenant scope; the tenants asked for are in the filters too.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import (
    Case,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Left
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext as _

from ai_agents.models import Conversation, ConversationRead, Message
from ai_agents.rules.inbox_labels import CHANNELS
from ai_agents.selectors.conversation_search import (
    QUERY_MAX_CHARS,
    conversation_search_condition,
)
from ai_agents.services.handoff import conversations_annotate_waiting
from erp.tenancy.models import Tenant

TABS = ("waiting", "mine", "unassigned", "bot", "closed")
UNREAD_CAP = 999
PREVIEW_CHARS = 160
# Columns a card never reads (the history summary can be large).
CARD_DEFER = (
    "history_summary",
    "channel_data",
    "contact__search_vector",
    "contact__custom_attributes",
)
_EPOCH = datetime(1970, 1, 1, tzinfo=ZoneInfo("UTC"))


class FilterError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class ConversationFilters:
    tenant_ids: tuple[int, ...]
    tab: str = ""
    status: str = ""
    channel: str = ""
    agent: uuid.UUID | None = None
    assigned: str = ""  # "me", "none" or a user id
    contact: uuid.UUID | None = None
    q: str = ""
    date_from: date | datetime | None = None
    date_to: date | datetime | None = None


def _uuid(params: Mapping[str, str], name: str) -> uuid.UUID | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise FilterError(name, _("%(v)s no es un identificador válido.") % {"v": raw}) from None


def _when(params: Mapping[str, str], name: str) -> date | datetime | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        value = parse_date(raw) if len(raw) == 10 else parse_datetime(raw)
    except ValueError:
        value = None
    if value is None:
        raise FilterError(name, _("Fecha no válida: %(v)s (use AAAA-MM-DD).") % {"v": raw[:40]})
    return value


def _choice(params: Mapping[str, str], name: str, allowed: Any) -> str:
    raw = params.get(name, "").strip()
    if raw and raw not in allowed:
        raise FilterError(
            name,
            _("Valor no válido para %(name)s: %(v)s. Valores posibles: %(allowed)s.")
            % {"name": name, "v": raw[:40], "allowed": ", ".join(sorted(allowed))},
        )
    return raw


def _assigned(params: Mapping[str, str]) -> str:
    raw = params.get("assigned", "").strip()
    if raw in ("", "me", "none") or (raw.isdigit() and len(raw) < 12):
        return raw
    raise FilterError("assigned", _("assigned admite me, none o el id de un miembro del equipo."))


def _tenants(params: Mapping[str, str], allowed: tuple[int, ...]) -> tuple[int, ...]:
    raw = params.get("tenant", "").strip()
    if not raw:
        return allowed
    if not raw.isdigit() or int(raw) not in allowed:
        raise FilterError("tenant", _("No pertenece a la empresa %(v)s.") % {"v": raw[:40]})
    return (int(raw),)


def conversation_filters_parse(
    params: Mapping[str, str], *, tenant_ids: tuple[int, ...]
) -> ConversationFilters:
    q = " ".join(params.get("q", "").split())
    if len(q) > QUERY_MAX_CHARS:
        raise FilterError(
            "q", _("La búsqueda admite como máximo %(n)s caracteres.") % {"n": QUERY_MAX_CHARS}
        )
    return ConversationFilters(
        tenant_ids=_tenants(params, tenant_ids),
        tab=_choice(params, "tab", TABS),
        status=_choice(params, "status", (*Conversation.Status.values, "all")).replace("all", ""),
        channel=_choice(params, "channel", CHANNELS),
        agent=_uuid(params, "agent"),
        assigned=_assigned(params),
        contact=_uuid(params, "contact"),
        q=q,
        date_from=_when(params, "from"),
        date_to=_when(params, "to"),
    )


def _held(now: datetime) -> Q:
    return Q(assigned_to__isnull=False, claim_expires_at__gt=now)


def _tab_condition(tab: str, user_id: int | None, now: datetime) -> Q:
    """The tab's condition on the row; "waiting" is narrowed further on its annotation
    (`conversation_list`)."""
    open_ = Q(status__in=Conversation.OPEN_STATUSES)
    if tab == "waiting":
        return Q(status=Conversation.Status.ESCALATED)
    if tab == "mine":
        return open_ & Q(assigned_to_id=user_id)
    if tab == "unassigned":
        # A person must act and nobody holds it; the bot's conversations are "bot", not this.
        return Q(status=Conversation.Status.ESCALATED) & ~_held(now)
    if tab == "bot":
        return Q(status=Conversation.Status.ACTIVE)
    return Q(status__in=[Conversation.Status.CLOSED, Conversation.Status.EXPIRED])


def _bound(value: date | datetime, zone: ZoneInfo, *, end: bool) -> datetime:
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else timezone.make_aware(value, zone)
    day = value + timedelta(days=1) if end else value
    return datetime.combine(day, time.min, tzinfo=zone)


def _date_condition(filters: ConversationFilters) -> Q:
    """Conversations with activity in [from, to]; a bare date is a whole day in the tenant's
    time zone (each tenant its own)."""
    if filters.date_from is None and filters.date_to is None:
        return Q()
    zones = dict(Tenant.objects.filter(pk__in=filters.tenant_ids).values_list("pk", "timezone"))
    condition = Q(pk__in=[])
    for tenant_id, zone_name in zones.items():
        zone = ZoneInfo(zone_name or "UTC")
        part = Q(tenant_id=tenant_id)
        if filters.date_from is not None:
            part &= Q(last_message_at__gte=_bound(filters.date_from, zone, end=False))
        if filters.date_to is not None:
            part &= Q(started_at__lt=_bound(filters.date_to, zone, end=True))
        condition |= part
    return condition


def _field_conditions(filters: ConversationFilters, user_id: int | None) -> Q:
    condition = Q(tenant_id__in=filters.tenant_ids)
    if filters.status:
        condition &= Q(status=filters.status)
    if filters.channel:
        condition &= Q(channel=filters.channel)
    if filters.agent is not None:
        condition &= Q(agent_id=filters.agent)
    if filters.contact is not None:
        condition &= Q(contact_id=filters.contact)
    if filters.assigned == "me":
        condition &= Q(assigned_to_id=user_id)
    elif filters.assigned == "none":
        condition &= Q(assigned_to__isnull=True)
    elif filters.assigned:
        condition &= Q(assigned_to_id=int(filters.assigned))
    return condition


def conversation_list(
    *, filters: ConversationFilters, user_id: int | None
) -> QuerySet[Conversation]:
    """The conversations matching `filters`, annotated for the cards; ordered by the caller
    (see `conversation_ordering`)."""
    now = timezone.now()
    rows = Conversation.objects.filter(_field_conditions(filters, user_id))
    if filters.tab:
        rows = rows.filter(_tab_condition(filters.tab, user_id, now))
    rows = rows.filter(_date_condition(filters))
    if filters.q:
        rows = rows.filter(conversation_search_condition(filters.q, tenant_ids=filters.tenant_ids))
    rows = rows.select_related("assigned_to", "escalated_to", "contact", "tenant").defer(
        *CARD_DEFER
    )
    rows = cards_annotate(rows, user_id=user_id, waiting_order=filters.tab == "waiting")
    if filters.tab == "waiting":
        # The customer's last word is unanswered by a person, whoever holds it: a claim alone
        # answers nobody ("Sin asignar" is the tab of the ones nobody holds).
        rows = rows.filter(Q(waiting_since_at__isnull=False))
    return rows


def conversation_ordering(filters: ConversationFilters) -> tuple[str, ...]:
    """Waiting tab: who has waited longest first; otherwise the latest activity first."""
    if filters.tab == "waiting":
        return ("waiting_key", "id")
    return ("-last_message_at", "-id")


def cards_annotate(
    rows: QuerySet[Conversation], *, user_id: int | None, waiting_order: bool = False
) -> QuerySet[Conversation]:
    """What the card JSON reads besides the row: waiting time, preview, unread count; with
    `waiting_order`, `waiting_since_at` (`handoff.conversation_waiting_since` in SQL, for an
    escalated row) and `waiting_key` too (the waiting tab's order)."""
    rows = conversations_annotate_waiting(rows)
    if waiting_order:
        waiting = Case(
            When(
                Q(last_human_reply_at__isnull=True) | Q(last_human_reply_at__lt=F("escalated_at")),
                then=Coalesce("escalated_at", "last_inbound_at"),
            ),
            default=F("first_inbound_after_human"),
        )
        rows = rows.annotate(waiting_since_at=waiting)
        rows = rows.annotate(waiting_key=Coalesce("waiting_since_at", "last_message_at"))
    rows = rows.annotate(
        last_message_preview=Left(
            Case(  # waiting for a person: what the customer asked, not the bot's notice
                When(status=Conversation.Status.ESCALATED, then=_last_content([Message.Role.USER])),
                default=_last_content([Message.Role.USER, Message.Role.ASSISTANT]),
            ),
            PREVIEW_CHARS,
        )
    )
    if user_id is None:
        return rows
    read_at = ConversationRead.objects.filter(conversation=OuterRef("pk"), user_id=user_id).values(
        "last_read_at"
    )[:1]
    rows = rows.annotate(read_at=Coalesce(Subquery(read_at), Value(_EPOCH)))
    unread = Message.objects.filter(
        tenant_id=OuterRef("tenant_id"),
        conversation=OuterRef("pk"),
        role=Message.Role.USER,
        created_at__gt=OuterRef("read_at"),
    ).values("id")[:UNREAD_CAP]
    return rows.annotate(unread_count=_Count(unread))


def _last_content(roles: list[str]) -> Subquery:
    """The text of the conversation's newest message of these roles."""
    last = (
        Message.objects.filter(
            tenant_id=OuterRef("tenant_id"), conversation=OuterRef("pk"), role__in=roles
        )
        .order_by("-created_at")
        .values("content")[:1]
    )
    return Subquery(last)


class _Count(Subquery):
    """count(*) of a (limited) subquery."""

    template = "(SELECT count(*) FROM (%(subquery)s) _rows)"
    output_field = IntegerField()
