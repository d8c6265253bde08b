"""What tells a member a customer waits: `GET /inbox/waiting` (their tenants' conversations whose
customer a person has not answered yet, held or not: the waiting tab; never another tenant's)
and `GET|POST /inbox/preferences` (their own choice of notification and sound; bad input is a
400 JSON error). The conversation page's header reads
as words in the tenant's zone."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.inbox.alerts import WAITING_SHOWN
from ai_agents.models import Contact, Conversation, InboxPreference
from ai_agents.rules.inbox_labels import contact_display_name
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_waiting_counts_the_members_tenants_unanswered_conversations_only(
    owner: Persona, member: Persona, outsider: Persona
) -> None:
    ours = conversation_make(agent_for(owner.tenant), thread="ana")
    held = conversation_make(ours.agent, thread="held")
    answered = conversation_make(ours.agent, thread="answered")
    conversation_make(ours.agent, thread="bot", status="active")
    theirs = conversation_make(agent_for(outsider.tenant), thread="bob")
    handoff.conversation_claim(held, member.user)  # a claim alone answers nobody
    handoff.conversation_claim(answered, member.user)
    handoff.conversation_reply(answered, member.user, "Hola, ya estoy aquí.")

    mine = _client(owner.user).get("/inbox/waiting").json()
    assert mine["count"] == 2
    assert {r["id"] for r in mine["conversations"]} == {str(ours.pk), str(held.pk)}
    [row] = [r for r in mine["conversations"] if r["id"] == str(ours.pk)]
    assert row["contact"] == "Cliente ana"
    assert row["channel_label"] == "API" and row["reason_label"] == "El cliente pidió una persona"
    assert row["url"] == f"/inbox/{ours.pk}" and row["tenant"]["name"] == "Acme"
    # Counted for everyone; a notification only for whom it concerns (free, or theirs).
    alerts = {r["id"]: r["alert"] for r in mine["conversations"]}
    assert alerts == {str(ours.pk): True, str(held.pk): False}
    held_by = _client(member.user).get("/inbox/waiting").json()["conversations"]
    assert {r["id"]: r["alert"] for r in held_by} == {str(ours.pk): True, str(held.pk): True}
    assert [
        r["id"] for r in _client(outsider.user).get("/inbox/waiting").json()["conversations"]
    ] == [str(theirs.pk)]

    MembershipFactory.create(tenant=outsider.tenant, user=owner.user, role=Membership.Role.AGENT)
    both = _client(owner.user).get("/inbox/waiting").json()
    assert both["count"] == 3
    assert {r["id"] for r in both["conversations"]} == {str(ours.pk), str(held.pk), str(theirs.pk)}
    assert (
        _client(owner.user).get("/inbox/waiting", HTTP_ACCEPT="application/json").status_code == 200
    )


@pytest.mark.django_db
def test_a_conversation_that_starts_waiting_is_listed_however_many_wait_longer(
    owner: Persona, member: Persona
) -> None:
    """The page alerts on ids it has not seen: past WAITING_SHOWN older waiting conversations,
    a new one (or a colleague's whose lease ran out) must still be in the list."""
    agent = agent_for(owner.tenant)
    older = [
        conversation_make(agent, thread=f"old-{n}", escalated_minutes_ago=60 + n)
        for n in range(WAITING_SHOWN + 1)
    ]
    colleagues = conversation_make(agent, thread="colleague", escalated_minutes_ago=10)
    handoff.conversation_claim(colleagues, member.user)
    mine = conversation_make(agent, thread="mine", escalated_minutes_ago=30)
    handoff.conversation_claim(mine, owner.user)  # held by the viewer: it alerts them
    client = _client(owner.user)

    def listed() -> dict[str, bool]:
        body = client.get("/inbox/waiting").json()
        assert len(body["conversations"]) == WAITING_SHOWN
        return {r["id"]: r["alert"] for r in body["conversations"]}

    first = listed()
    assert str(colleagues.pk) not in first  # theirs: behind the ones for this person
    since = [r["since"] for r in client.get("/inbox/waiting").json()["conversations"]]
    assert since == sorted(since, reverse=True)  # the page compares them as strings
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", s) for s in since)
    assert first[str(mine.pk)] is True
    new = conversation_make(agent, thread="new", escalated_minutes_ago=1)
    assert listed()[str(new.pk)] is True
    assert str(older[-1].pk) not in listed()  # the longest-waiting drop out of the list

    Conversation.objects.for_tenant(owner.tenant).filter(pk=colleagues.pk).update(
        claim_expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert listed()[str(colleagues.pk)] is True
    assert client.get("/inbox/waiting").json()["count"] == WAITING_SHOWN + 4


@pytest.mark.django_db
def test_preferences_are_the_persons_own_and_bad_input_is_a_400(
    owner: Persona, outsider: Persona
) -> None:
    client = _client(owner.user)
    assert client.get("/inbox/preferences").json() == {
        "notify_desktop": False,
        "notify_sound": False,
    }
    saved = client.post(
        "/inbox/preferences", {"notify_sound": True}, content_type="application/json"
    )
    assert saved.status_code == 200
    assert saved.json() == {"notify_desktop": False, "notify_sound": True}
    assert _client(outsider.user).get("/inbox/preferences").json()["notify_sound"] is False

    for body in ("not json", "[]", "{}", '{"notify_sound": "yes"}', '{"volume": 3}'):
        bad = client.post("/inbox/preferences", body, content_type="application/json")
        assert bad.status_code == 400, body
        assert bad.json()["error"]["message"], body
    big = client.post(
        "/inbox/preferences", '{"x": "' + "a" * 5000 + '"}', content_type="application/json"
    )
    assert big.status_code == 400
    assert InboxPreference.objects.get(user=owner.user).notify_sound is True
    anonymous = Client().post("/inbox/preferences", "{}", content_type="application/json")
    assert anonymous.status_code == 302


@pytest.mark.django_db
def test_the_conversation_header_reads_as_words_in_the_tenants_zone(
    owner: Persona, member: Persona, outsider: Persona
) -> None:
    owner.tenant.timezone = "Europe/Madrid"
    owner.tenant.save()
    conversation = conversation_make(agent_for(owner.tenant), channel="webchat", thread="w1")
    Contact.objects.for_tenant(owner.tenant).filter(pk=conversation.contact_id).update(
        name="", external_id="webchat:abc123"
    )
    handoff.conversation_claim(conversation, member.user)
    conversation.refresh_from_db()

    html = _client(owner.user).get(f"/inbox/{conversation.pk}").content.decode()

    visitor = contact_display_name(conversation.contact, fallback_key=conversation.pk)
    assert visitor.startswith("Visitante web ") and "webchat:abc123" not in html
    assert visitor in html
    assert visitor in _client(member.user).get("/inbox/?tab=mine").content.decode()
    assert "Chat web" in html and "user_request" not in html
    visible = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert visible.count("Atendida por") == 1
    assert conversation.claimed_at is not None
    since = conversation.claimed_at.astimezone(ZoneInfo("Europe/Madrid"))
    assert f"Atendida por {member.user.email} desde {since:%d/%m/%Y %H:%M}" in html
    assert 'id="inbox-claim" data-action="claim" disabled' in html
    assert _client(outsider.user).get(f"/inbox/{conversation.pk}").status_code == 404
