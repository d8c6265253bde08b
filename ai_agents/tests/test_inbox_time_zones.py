"""Absolute times in the inbox say their zone (the tenant's): a title on every time ("Hora de
Europe/Madrid (UTC+1)") and the offset after the lease's end ("hasta … UTC+1"), the same in
Spanish and English, on the list's cards, the conversation page, its updates and the WhatsApp
window's title. Offsets follow summer time."""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.inbox import labels
from ai_agents.models import Conversation
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Tenant
from erp.testing.fixtures import Persona

ZONE = "America/Sao_Paulo"  # UTC-3 all year (no summer time since 2019)


@pytest.mark.parametrize(
    ("zone", "when", "offset"),
    [
        ("Europe/Madrid", datetime(2026, 1, 15, 12, tzinfo=UTC), "UTC+1"),
        ("Europe/Madrid", datetime(2026, 7, 15, 12, tzinfo=UTC), "UTC+2"),
        ("Asia/Kolkata", datetime(2026, 1, 15, 12, tzinfo=UTC), "UTC+5:30"),
        ("America/Sao_Paulo", datetime(2026, 7, 15, 12, tzinfo=UTC), "UTC-3"),
        ("UTC", datetime(2026, 7, 15, 12, tzinfo=UTC), "UTC"),
    ],
)
def test_the_offset_of_a_moment_in_a_zone(zone: str, when: datetime, offset: str) -> None:
    place = zoneinfo.ZoneInfo(zone)
    assert labels.zone_offset(when, place) == offset
    assert labels.time_zone_text(when, place).endswith(f" {offset}")
    assert labels.zone_title(when, place) == f"Hora de {zone} ({offset})"


def _held_conversation(owner: Persona, member: Persona) -> Conversation:
    Tenant.objects.filter(pk=owner.tenant.pk).update(timezone=ZONE)
    conversation = conversation_make(agent_for(owner.tenant), thread="tz", channel="whatsapp")
    Conversation.objects.for_tenant(owner.tenant).filter(pk=conversation.pk).update(
        assigned_to=member.user,
        claimed_at=timezone.now(),
        claim_expires_at=timezone.now() + timedelta(minutes=10),
        last_inbound_at=timezone.now(),
    )
    return conversation


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "until", "title", "window"),
    [
        ("es", "Asignada a agent@acme.test hasta", "Hora de", "La ventana se cierra el"),
        ("en", "Assigned to agent@acme.test until", "America/Sao_Paulo time", "The window closes"),
    ],
)
def test_lease_times_say_their_zone_on_cards_and_the_page(
    owner: Persona, member: Persona, language: str, until: str, title: str, window: str
) -> None:
    conversation = _held_conversation(owner, member)
    client = Client()
    client.force_login(owner.user)
    client.cookies["django_language"] = language

    card = client.get(f"/inbox/contacts/{conversation.contact_id}").content.decode()
    assert re.search(rf"{until} \d\d/\d\d/\d{{4}} \d\d:\d\d UTC-3<", card), card
    assert f'title="{title}' in card and "(UTC-3)" in card

    page = client.get(f"/inbox/{conversation.pk}").content.decode()
    holder = re.search(r'<p id="inbox-holder"[^>]*title="([^"]*)"[^>]*>([^<]*)<', page)
    assert holder is not None
    assert holder.group(1).startswith(title) and holder.group(1).endswith("(UTC-3)")
    assert re.search(r"\d\d:\d\d UTC-3\)$", holder.group(2)), holder.group(2)
    assert re.search(rf'id="inbox-window" class="window" title="{window}[^"]* UTC-3"', page)
    assert re.search(rf'<time datetime="[^"]+" title="{title}[^"]*\(UTC-3\)">', page)

    state = client.get(f"/inbox/{conversation.pk}/events").json()["state"]
    assert state["claim_expires_text"].endswith(" UTC-3")
    assert state["holder_title"].startswith(title) and state["window_title"].endswith(" UTC-3")
    messages = client.get(f"/inbox/{conversation.pk}/events").json()["messages"]
    assert messages and all(m["time_title"].endswith("(UTC-3)") for m in messages)


@pytest.mark.django_db
def test_list_cards_give_each_time_its_zone(owner: Persona, owner_client: Any) -> None:
    Tenant.objects.filter(pk=owner.tenant.pk).update(timezone=ZONE)
    conversation_make(agent_for(owner.tenant), thread="w")
    client = Client()
    client.force_login(owner.user)
    html = client.get("/inbox/").content.decode()
    times = re.findall(r"<time [^>]*>", html)
    assert times and all('title="Hora de America/Sao_Paulo (UTC-3)"' in t for t in times)
