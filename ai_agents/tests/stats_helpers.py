"""A week of conversations whose statistics are worked out by hand (test_stats_api.py), also
shown by the statistics page's browser test. Tenant zone: America/Mexico_City (UTC-6).

Period 2026-03-01..2026-03-07 (local). In it (c7 and c9 are outside):
  c1 agent A webchat  03-02 10:00  closed, bot 2 s, CSAT 5, 0.010 USD     resolved by the AI
  c2 agent A webchat  03-02 11:00  expired, bot 4 s (no answer), 0.020    reopened by c3 (<72 h)
  c3 agent A webchat  03-03 10:00  active, bot 1 s (no answer), 0.005
  c4 agent A whatsapp 03-04 09:00  escalated user_request, bot 10 s, staff 300 s, closed by
                                   staff, CSAT 3, 0.030
  c5 agent B whatsapp 03-05 08:00  escalated low_confidence, bot 6 s (no answer), staff 120 s,
                                   0.015
  c6 agent B email    03-06 12:00  closed, bot 3 s, CSAT 4; c7 follows it 96 h later
                                   (> 72 h)                                resolved by the AI
  c8 agent A webchat  03-07 23:30  active, bot 0.5 s (no answer)  (05:30 UTC on 03-08)
  c7 agent B email    03-10 12:30  outside; c9 agent A 02-28 23:30 local (05:30 UTC 03-01)
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from decimal import Decimal
from typing import Any

from django.db import connection

from ai_agents.models import Agent, Conversation, Message
from ai_agents.services.stats_facts import (
    conversation_cost_backfill,
    conversation_facts_backfill,
)
from ai_agents.tests.handoff_helpers import agent_for
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import all_tenants

ZONE = zoneinfo.ZoneInfo("America/Mexico_City")
PERIOD = {"from": "2026-03-01", "to": "2026-03-07"}
NO_ANSWER = {"outcome": "no_answer"}


def _at(day: int, hour: int, minute: int = 0, *, month: int = 3) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, minute, tzinfo=ZONE)


def _conversation(agent: Agent, name: str, channel: str, **fields: Any) -> Conversation:
    started = fields.pop("started_at")
    rows = Conversation.objects.for_tenant(agent.tenant_id)
    conversation = rows.create(
        tenant_id=agent.tenant_id,
        agent=agent,
        channel=channel,
        channel_conversation_id=name,
        contact_identifier=name,
        **fields,
    )
    rows.filter(pk=conversation.pk).update(started_at=started, last_message_at=started)
    return conversation


def _message(
    conversation: Conversation, role: str, text: str, at: dt.datetime, **extra: Any
) -> None:
    Message.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id,
        conversation=conversation,
        agent_id=conversation.agent_id,
        role=role,
        content=text,
        created_at=at,
        **extra,
    )


def _exchange(
    conversation: Conversation, question: str, *, at: dt.datetime, reply_ms: int, **extra: Any
) -> None:
    """The customer's question at `at` and the bot's reply `reply_ms` later."""
    _message(conversation, "user", question, at)
    later = at + dt.timedelta(milliseconds=reply_ms)
    _message(conversation, "assistant", "Respuesta del bot.", later, **extra)


def _cost(conversation: Conversation | None, tenant: Tenant, usd: str) -> None:
    UsageLog.objects.for_tenant(tenant).create(
        tenant=tenant,
        conversation_id=conversation.pk if conversation else None,
        operation="llm_request",
        cost_usd=Decimal(usd),
    )


def stats_week(tenant: Tenant, staff: Any) -> dict[str, Any]:
    """Creates the week described above; returns the agents and conversations by name."""
    lucia, bruno = agent_for(tenant, "Lucía"), agent_for(tenant, "Bruno")
    made: dict[str, Any] = {"agent_a": lucia, "agent_b": bruno}
    c1 = _conversation(lucia, "c1", "webchat", started_at=_at(2, 10), status="closed")
    _exchange(c1, "¿Abren los domingos?", at=_at(2, 10), reply_ms=2000)
    _message(c1, "system", "Resumen interno.", _at(2, 10, 1))  # not a conversation message
    c2 = _conversation(lucia, "c2", "webchat", started_at=_at(2, 11), status="expired")
    _exchange(c2, "¿Hacen envíos a Canarias?", at=_at(2, 11), reply_ms=4000, metadata=NO_ANSWER)
    c3 = _conversation(
        lucia, "c3", "webchat", started_at=_at(3, 10), previous_conversation=c2, status="active"
    )
    _exchange(c3, "¿Envían a Canarias?", at=_at(3, 10), reply_ms=1000, metadata=NO_ANSWER)
    c4 = _conversation(lucia, "c4", "whatsapp", started_at=_at(4, 9), status="closed")
    _exchange(c4, "Quiero hablar con una persona", at=_at(4, 9), reply_ms=10_000)
    _message(
        c4, "assistant", "Hola, soy Ana.", _at(4, 9, 5) + dt.timedelta(seconds=10), author=staff
    )
    c5 = _conversation(bruno, "c5", "whatsapp", started_at=_at(5, 8), status="escalated")
    _exchange(
        c5, "¿Cuál es el horario del sábado?", at=_at(5, 8), reply_ms=6000, metadata=NO_ANSWER
    )
    _message(
        c5, "assistant", "Abrimos de 9 a 14.", _at(5, 8, 2) + dt.timedelta(seconds=6), author=staff
    )
    c6 = _conversation(bruno, "c6", "email", started_at=_at(6, 12), status="closed")
    _exchange(c6, "Gracias por todo", at=_at(6, 12), reply_ms=3000)
    c7 = _conversation(bruno, "c7", "email", started_at=_at(10, 12, 30), previous_conversation=c6)
    _exchange(c7, "Otra pregunta", at=_at(10, 12, 30), reply_ms=1000)
    c8 = _conversation(lucia, "c8", "webchat", started_at=_at(7, 23, 30), status="active")
    _exchange(c8, "Hacen envios a Canarias", at=_at(7, 23, 30), reply_ms=500, metadata=NO_ANSWER)
    c9 = _conversation(lucia, "c9", "webchat", started_at=_at(28, 23, 30, month=2))
    _exchange(c9, "Fuera del periodo", at=_at(28, 23, 30, month=2), reply_ms=700)
    _ends(
        {c1: _at(2, 10, 5), c2: _at(2, 12), c4: _at(4, 9, 30), c6: _at(6, 12, 30)},
        escalations={c4: (_at(4, 9) + dt.timedelta(seconds=10), "user_request")},
    )
    _ends({}, escalations={c5: (_at(5, 8) + dt.timedelta(seconds=6), "low_confidence")})
    rows = Conversation.objects.for_tenant(tenant)
    rows.filter(pk=c4.pk).update(assigned_to=staff, escalated_to=staff)
    rows.filter(pk=c5.pk).update(escalated_to=staff)
    for conversation, rating in ((c1, 5), (c4, 3), (c6, 4)):
        rows.filter(pk=conversation.pk).update(satisfaction_rating=rating)
    for conversation, usd in ((c1, "0.010"), (c2, "0.020"), (c3, "0.005"), (c4, "0.030")):
        _cost(conversation, tenant, usd)
    _cost(c5, tenant, "0.015")
    _cost(c7, tenant, "0.100")  # outside the period
    _cost(None, tenant, "0.500")  # knowledge-base embeddings: not a conversation's cost
    made.update({f"c{i}": c for i, c in enumerate((c1, c2, c3, c4, c5, c6, c7, c8, c9), 1)})
    # Rows made the old way (messages without their conversation's facts, usage rows without
    # their conversation's cost): the backfills of migrations 0024 and 0026 fill them in.
    with all_tenants(), connection.cursor() as cursor:
        conversation_facts_backfill(cursor=cursor)
        conversation_cost_backfill(cursor=cursor)
    return made


def _ends(
    closed: dict[Conversation, dt.datetime],
    *,
    escalations: dict[Conversation, tuple[dt.datetime, str]],
) -> None:
    for conversation, at in closed.items():
        rows = Conversation.objects.for_tenant(conversation.tenant_id)
        rows.filter(pk=conversation.pk).update(closed_at=at)
    for conversation, (at, reason) in escalations.items():
        rows = Conversation.objects.for_tenant(conversation.tenant_id)
        rows.filter(pk=conversation.pk).update(escalated_at=at, escalation_reason=reason)
