"""The list's "Sin asignar": escalated conversations nobody holds (a lease that ran out counts as
nobody), never the ones the bot handles; and "Esperando respuesta": the customer's last word is
unanswered by a person, whoever holds it. Each tab's count, its cards and the cards' label
agree, on the page and in the API."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import Conversation, Message
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db


def _say(conversation: Conversation, text: str) -> None:
    """The customer writes again (after the team's reply)."""
    Message.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id,
        conversation=conversation,
        agent_id=conversation.agent_id,
        role=Message.Role.USER,
        content=text,
    )


def _cards(html: str) -> dict[str, str]:
    """{conversation id: the card's HTML}."""
    found = re.findall(r'(<li class="inbox-card.*?</li>)', html, flags=re.S)
    return {re.search(r'data-conversation-id="([^"]+)"', c).group(1): c for c in found}  # type: ignore[union-attr]  # every card has one


def test_unassigned_means_escalated_with_nobody_holding_it(
    owner: Persona, member: Persona, owner_client: Any
) -> None:
    agent = agent_for(owner.tenant)
    free = conversation_make(agent, thread="free")
    expired = conversation_make(agent, thread="expired")
    held = conversation_make(agent, thread="held")
    bot = conversation_make(agent, thread="bot", status="active")
    rows = Conversation.objects.for_tenant(owner.tenant)
    now = timezone.now()
    rows.filter(pk=expired.pk).update(
        assigned_to=member.user, claim_expires_at=now - timedelta(minutes=1)
    )
    rows.filter(pk=held.pk).update(
        assigned_to=member.user, claim_expires_at=now + timedelta(minutes=10)
    )
    client = Client()
    client.force_login(owner.user)

    html = client.get("/inbox/", {"tab": "unassigned"}).content.decode()

    assert re.search(r'data-count="unassigned">(\d+)<', html).group(1) == "2"  # type: ignore[union-attr]  # the tab is always there
    cards = _cards(html)
    assert set(cards) == {str(free.pk), str(expired.pk)}
    assert all("Sin asignar" in card for card in cards.values())
    everywhere: dict[str, str] = {}
    for tab in ("bot", "waiting"):
        everywhere |= _cards(client.get("/inbox/", {"tab": tab}).content.decode())
    assert "Sin asignar" not in everywhere[str(bot.pk)]  # the bot handles it
    # the held one (unanswered) waits for a reply, under its holder's name
    assert str(held.pk) in everywhere
    assert "Asignada a agent@acme.test hasta" in everywhere[str(held.pk)]
    labelled = {pk for pk, card in everywhere.items() if "Sin asignar" in card}
    assert labelled == {str(free.pk), str(expired.pk)}  # the label and the count agree
    api = owner_client.get("/api/v1/conversations", {"tab": "unassigned"}).json()
    assert {c["id"] for c in api["results"]} == {str(free.pk), str(expired.pk)}
    fragment = client.get("/inbox/", {"fragment": "cards", "tab": "unassigned"}).json()
    assert fragment["counts"]["unassigned"] == 2 and fragment["counts"]["bot"] == 1


def _tab(client: Client, tab: str) -> tuple[int, dict[str, str]]:
    html = client.get("/inbox/", {"tab": tab}).content.decode()
    count = re.search(rf'data-count="{tab}">(\d+)<', html).group(1)  # type: ignore[union-attr]  # the tab is always there
    return int(count), _cards(html)


def test_waiting_means_unanswered_by_a_person_whoever_holds_it(
    owner: Persona, member: Persona
) -> None:
    agent = agent_for(owner.tenant)
    new = conversation_make(agent, thread="new", escalated_minutes_ago=3)
    claimed = conversation_make(agent, thread="claimed", escalated_minutes_ago=30)
    answered = conversation_make(agent, thread="answered", escalated_minutes_ago=60)
    again = conversation_make(agent, thread="again", escalated_minutes_ago=90)
    for conversation in (claimed, answered, again):
        handoff.conversation_claim(conversation, member.user)
    for conversation in (answered, again):
        handoff.conversation_reply(conversation, member.user, "Ya lo miro")
    _say(again, "¿Sigue ahí?")
    client = Client()
    client.force_login(owner.user)

    count, cards = _tab(client, "waiting")
    # whoever waited longest first; the one answered last is not waiting
    assert list(cards) == [str(claimed.pk), str(new.pk), str(again.pk)] and count == 3
    assert all("Esperando " in card for card in cards.values())  # the label agrees
    assert "Asignada a agent@acme.test" in cards[str(claimed.pk)]
    assert "Sin asignar" in cards[str(new.pk)]
    count, cards = _tab(client, "unassigned")
    assert list(cards) == [str(new.pk)] and count == 1  # a different list, not another order
    answered_card = _cards(client.get(f"/inbox/contacts/{answered.contact_id}").content.decode())
    assert "Esperando " not in answered_card[str(answered.pk)]
