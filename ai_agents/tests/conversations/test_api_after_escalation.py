"""RN-7 for every conversation: an escalated conversation expires after 24 h idle like any
other (a claim that still runs keeps it), and the customer's next message starts a new
conversation the bot answers, linked to the old one (API and inbox)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import Conversation
from ai_agents.tasks import bulk_expire_conversations
from ai_agents.tests.conversations.support import create_agent, say
from erp.testing.fixtures import Persona


def _set(tenant: Any, conversation_id: str, **values: Any) -> None:
    Conversation.objects.for_tenant(tenant).filter(pk=conversation_id).update(**values)


def _escalated(tenant: Any, conversation_id: str, idle: timedelta, **values: Any) -> None:
    now = timezone.now()
    _set(
        tenant,
        conversation_id,
        status="escalated",
        escalated_at=now - idle,
        escalation_reason="user_request",
        escalation_priority="high",
        last_message_at=now - idle,
        **values,
    )


@pytest.mark.django_db
def test_idle_escalated_conversations_expire_unless_a_claim_holds_them(
    api_a: Any, api_b: Any, tenant_a: Any, tenant_b: Any, owner: Persona
) -> None:
    agent_a = create_agent(api_a, provider="offline")
    agent_b = create_agent(api_b, provider="offline")
    ids = {
        name: say(api_a, agent_a, "Hola", contact=name)["conversation_id"]
        for name in ("idle", "held", "lapsed")
    }
    b_idle = say(api_b, agent_b, "Hola", contact="idle")["conversation_id"]
    b_recent = say(api_b, agent_b, "Hola", contact="recent")["conversation_id"]
    now, day = timezone.now(), timedelta(hours=24, minutes=1)
    _escalated(tenant_a, ids["idle"], day)
    _escalated(
        tenant_a,
        ids["held"],
        day,
        assigned_to=owner.user,
        claim_expires_at=now + timedelta(minutes=9),
    )
    _escalated(
        tenant_a,
        ids["lapsed"],
        day,
        assigned_to=owner.user,
        claim_expires_at=now - timedelta(hours=2),
    )
    _escalated(tenant_b, b_idle, day)
    _escalated(tenant_b, b_recent, timedelta(hours=23))

    assert bulk_expire_conversations.apply().get(timeout=30) == 3

    status = {
        str(c.pk): c.status
        for c in Conversation.objects.unscoped().filter(pk__in=[*ids.values(), b_idle, b_recent])
    }
    assert status == {
        ids["idle"]: "expired",
        ids["held"]: "escalated",  # its claim still runs
        ids["lapsed"]: "expired",
        b_idle: "expired",
        b_recent: "escalated",
    }
    # The customer whose claimed conversation idled writes: the person keeps it.
    again = say(api_a, agent_a, "¿Siguen ahí?", contact="held")
    assert (again["conversation_id"], again["conversation_status"]) == (ids["held"], "escalated")
    assert again["reply"] is None  # the bot stays quiet while a person holds it


@pytest.mark.django_db
def test_the_next_message_after_expiry_starts_a_new_answered_conversation_linked_to_the_old(
    api_a: Any, api_b: Any, tenant_a: Any, owner: Persona
) -> None:
    agent_id = create_agent(api_a, provider="offline")
    old = say(api_a, agent_id, "Quiero hablar con una persona", contact="cli-1")["conversation_id"]
    _escalated(tenant_a, old, timedelta(hours=25))

    # No beat run yet: the message itself expires the idle escalated conversation.
    new = say(api_a, agent_id, "Hola de nuevo, ¿abren hoy?", contact="cli-1")

    assert new["conversation_id"] != old
    assert new["conversation_status"] == "active"
    assert new["reply"] and new["reply"]["text"]  # the bot answers the new conversation
    detail = api_a.get(f"/api/v1/conversations/{new['conversation_id']}").json()
    assert detail["previous_conversation"] == old
    assert api_a.get(f"/api/v1/conversations/{old}").json()["status"] == "expired"
    listed = api_a.get("/api/v1/conversations?status=active").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["previous_conversation"] for r in rows] == [old]
    # The first conversation of a thread follows none; another tenant never sees the link.
    assert api_a.get(f"/api/v1/conversations/{old}").json()["previous_conversation"] is None
    assert api_b.get(f"/api/v1/conversations/{new['conversation_id']}").status_code == 404
    # Staff follow the link in the inbox.
    staff = Client()
    staff.force_login(owner.user)
    page = staff.get(f"/inbox/{new['conversation_id']}").content.decode()
    assert f'id="inbox-previous" href="/inbox/{old}"' in page


@pytest.mark.django_db
def test_a_conversation_closed_by_staff_is_linked_from_the_next_one(
    api_a: Any, tenant_a: Any
) -> None:
    agent_id = create_agent(api_a, provider="offline")
    first = say(api_a, agent_id, "Hola", contact="cli-9")["conversation_id"]
    _set(tenant_a, first, status="closed", closed_at=timezone.now())
    other_thread = say(api_a, agent_id, "Hola", contact="cli-10")["conversation_id"]

    second = say(api_a, agent_id, "Otra pregunta", contact="cli-9")["conversation_id"]

    assert second != first
    detail = api_a.get(f"/api/v1/conversations/{second}").json()
    assert detail["previous_conversation"] == first
    assert (
        api_a.get(f"/api/v1/conversations/{other_thread}").json()["previous_conversation"] is None
    )
