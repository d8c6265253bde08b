"""The conversation page's new data (issue 16, the page part): the teammate picker lists the
staff members of the conversation's own tenant only (a member of two tenants sees each
tenant's team under its conversations; the outsider gets 404), and internal notes are in the
first render and in the page's events, in note shape."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import ConversationNote
from ai_agents.services.inbox import conversation_note_add
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import Persona


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _picker(html: str) -> list[str]:
    select = re.search(r'<select id="inbox-assignee".*?</select>', html, re.S)
    assert select is not None
    return re.findall(r'<option value="([^"]+)"', select.group(0))


@pytest.mark.django_db
def test_the_picker_offers_the_staff_of_the_conversations_tenant_only(
    owner: Persona, member: Persona, outsider: Persona
) -> None:
    ours = conversation_make(agent_for(owner.tenant))
    theirs = conversation_make(agent_for(outsider.tenant), thread="ajeno")
    both = UserFactory(username="both@acme.test")
    MembershipFactory.create(tenant=owner.tenant, user=both, role=Membership.Role.AGENT)
    MembershipFactory.create(tenant=outsider.tenant, user=both, role=Membership.Role.AGENT)
    not_staff = UserFactory(username="shop@acme.test", is_staff=False)
    MembershipFactory.create(tenant=owner.tenant, user=not_staff, role=Membership.Role.AGENT)

    page = _client(owner.user).get(f"/inbox/{ours.pk}")

    assert page.status_code == 200
    # The viewer first, then the rest; a user without staff rights cannot be assigned.
    assert _picker(page.content.decode()) == [
        "owner@acme.test",
        "agent@acme.test",
        "both@acme.test",
    ]
    assert _client(owner.user).get(f"/inbox/{theirs.pk}").status_code == 404
    assert _client(outsider.user).get(f"/inbox/{ours.pk}").status_code == 404

    client = _client(both)
    assert _picker(client.get(f"/inbox/{ours.pk}").content.decode()) == [
        "both@acme.test",
        "agent@acme.test",
        "owner@acme.test",
    ]
    assert _picker(client.get(f"/inbox/{theirs.pk}").content.decode()) == [
        "both@acme.test",
        "owner@globex.test",
    ]


@pytest.mark.django_db
def test_notes_are_in_the_page_and_its_events_in_note_shape(
    owner: Persona, outsider: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    conversation_note_add(conversation=conversation, author=owner.user, text="Cliente VIP")
    note = ConversationNote.objects.for_tenant(owner.tenant).get()

    page = _client(owner.user).get(f"/inbox/{conversation.pk}").content.decode()
    events = _client(owner.user).get(f"/inbox/{conversation.pk}/events").json()

    assert f'data-note-id="{note.pk}"' in page
    assert "Cliente VIP" in page
    assert events["notes"] == [
        {
            "kind": "note",
            "id": str(note.pk),
            "text": "Cliente VIP",
            "author": {"id": owner.user.pk, "name": "owner@acme.test"},
            "created_at": note.created_at.isoformat(),
            # the zone of the time the page shows (the tenant's)
            "time_title": "Hora de America/Mexico_City (UTC-6)",
        }
    ]
    outsider_events = _client(outsider.user).get(f"/inbox/{conversation.pk}/events")
    assert outsider_events.status_code == 404
