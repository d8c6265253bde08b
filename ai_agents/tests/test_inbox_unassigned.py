"""The list's "Sin asignar": escalated conversations nobody holds (a lease that ran out counts as
nobody), never the ones the bot handles. The tab's count, its cards and the cards' label agree,
on the page and in the API."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import Conversation
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db


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
    # the held one is in no tab of the owner's; its contact's page shows its card
    everywhere |= _cards(client.get(f"/inbox/contacts/{held.contact_id}").content.decode())
    assert "Asignada a agent@acme.test hasta" in everywhere[str(held.pk)]
    labelled = {pk for pk, card in everywhere.items() if "Sin asignar" in card}
    assert labelled == {str(free.pk), str(expired.pk)}  # the label and the count agree
    api = owner_client.get("/api/v1/conversations", {"tab": "unassigned"}).json()
    assert {c["id"] for c in api["results"]} == {str(free.pk), str(expired.pk)}
    fragment = client.get("/inbox/", {"fragment": "cards", "tab": "unassigned"}).json()
    assert fragment["counts"]["unassigned"] == 2 and fragment["counts"]["bot"] == 1
