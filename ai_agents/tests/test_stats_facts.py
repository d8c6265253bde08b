"""The statistics facts a conversation keeps (services/stats_facts.py), written by the real
paths: the customer's messages through `POST /api/v1/agents/{id}/messages` (a new thread, then
the known thread's one-round-trip store), the engine's replies (one of them `no_answer`), a
person's claim and reply through the handoff API. The backfill of migration 0023 computes the
same facts from the messages; the statistics API reads them."""

from __future__ import annotations

import zoneinfo
from datetime import datetime
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from ai_agents.models import Conversation, Message
from ai_agents.services.stats_facts import conversation_facts_backfill
from ai_agents.tests.conversations.support import create_agent, say, shipping_kb
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import all_tenants, tenant_scope

pytestmark = pytest.mark.django_db

FACTS = (
    "customer_messages",
    "assistant_messages",
    "first_customer_at",
    "first_bot_response_ms",
    "first_human_response_ms",
    "staff_involved",
    "no_answer_replies",
)
QUESTION = "¿Con cuánta anticipación se encarga un pastel de boda?"


def _facts(conversation_id: str) -> dict[str, Any]:
    with all_tenants():
        return Conversation.objects.unscoped().filter(pk=conversation_id).values(*FACTS).get()


def _ms(later: datetime, earlier: datetime) -> int:
    return round((later - earlier).total_seconds() * 1000)


def _times(tenant: Tenant, conversation_id: str) -> dict[str, list[datetime]]:
    with tenant_scope(tenant):
        rows = Message.objects.filter(conversation_id=conversation_id).order_by("created_at")
        found: dict[str, list[datetime]] = {"user": [], "bot": [], "staff": []}
        for role, author, at in rows.values_list("role", "author_id", "created_at"):
            kind = "user" if role == "user" else "staff" if author else "bot"
            found[kind].append(at)
        return found


def test_the_real_paths_write_the_facts_the_backfill_computes(
    api_a: Any, owner_client: Any, tenant_a: Tenant
) -> None:
    agent = create_agent(api_a, provider="offline", knowledge_bases=[str(shipping_kb(tenant_a).pk)])
    answered = say(api_a, agent, "¿Cuánto cuesta el envío?")
    refused = say(api_a, agent, QUESTION)  # the known thread's store; the bot has no answer
    conversation_id = answered["conversation_id"]
    assert refused["conversation_id"] == conversation_id
    url = f"/api/v1/conversations/{conversation_id}"
    assert owner_client.post(f"{url}/claim", {}, format="json").status_code == 200
    staff = owner_client.post(f"{url}/reply", {"text": "Hola, soy Ana."}, format="json")
    assert staff.status_code == 200, staff.content

    written = _facts(conversation_id)
    times = _times(tenant_a, conversation_id)
    with tenant_scope(tenant_a):
        escalated_at = Conversation.objects.get(pk=conversation_id).escalated_at
    assert escalated_at is not None  # the staff takeover
    assert written == {
        "customer_messages": 2,
        "assistant_messages": 3,
        "first_customer_at": times["user"][0],
        "first_bot_response_ms": _ms(times["bot"][0], times["user"][0]),
        "first_human_response_ms": _ms(times["staff"][0], escalated_at),
        "staff_involved": True,
        "no_answer_replies": 1,
    }

    # The same conversation as a row made before the facts existed: the backfill agrees.
    with all_tenants(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ai_agents_conversation SET customer_messages = 0, assistant_messages = 0,"
            " first_customer_at = NULL, first_bot_response_ms = NULL,"
            " first_human_response_ms = NULL, staff_involved = false, no_answer_replies = 0"
        )
        assert conversation_facts_backfill(cursor=cursor, batch=1) == 1
    assert _facts(conversation_id) == written

    # The statistics' days are the tenant's (the default, America/Mexico_City, runs 6 h behind UTC).
    today = timezone.localdate(timezone=zoneinfo.ZoneInfo(tenant_a.timezone)).isoformat()
    body = api_a.get("/api/v1/stats", {"from": today, "to": today}).json()
    assert body["messages"] == 5
    assert body["first_response_ms"]["bot"]["count"] == 1
    assert body["first_response_ms"]["bot"]["p50"] == written["first_bot_response_ms"]
    assert body["first_response_ms"]["people"]["p50"] == written["first_human_response_ms"]
    assert [q["question"] for q in body["unanswered_questions"]] == [QUESTION]
    assert body["resolved_by_ai"] == 0


def test_each_tenants_conversations_keep_their_own_facts(
    api_a: Any, api_b: Any, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    agent_a = create_agent(
        api_a, provider="offline", knowledge_bases=[str(shipping_kb(tenant_a).pk)]
    )
    agent_b = create_agent(api_b, provider="offline")
    in_a = say(api_a, agent_a, "¿Cuánto cuesta el envío?")
    in_b = [say(api_b, agent_b, QUESTION, contact="b-1") for _ in range(2)]

    facts_a, facts_b = _facts(in_a["conversation_id"]), _facts(in_b[0]["conversation_id"])
    assert (facts_a["customer_messages"], facts_a["assistant_messages"]) == (1, 1)
    assert facts_a["no_answer_replies"] == 0
    assert (facts_b["customer_messages"], facts_b["assistant_messages"]) == (2, 2)
    with tenant_scope(tenant_b):
        refusals = Message.objects.filter(
            conversation_id=in_b[0]["conversation_id"], metadata__outcome="no_answer"
        ).count()
    assert facts_b["no_answer_replies"] == refusals >= 1
    assert not facts_a["staff_involved"] and facts_a["first_human_response_ms"] is None
