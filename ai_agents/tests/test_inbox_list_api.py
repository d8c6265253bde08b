"""GET /api/v1/conversations: tabs, filters, search and the card JSON, for a member of one
tenant, a member of two and API keys; bad filters are 400 in words."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from ai_agents.models import Contact, Conversation, Message
from ai_agents.selectors import conversation_search
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

URL = "/api/v1/conversations"


def _ids(response: Any) -> set[str]:
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def _say(conversation: Conversation, text: str, *, role: str = "user", ago: int = 0) -> None:
    Message.objects.for_tenant(conversation.tenant_id).create(
        tenant_id=conversation.tenant_id,
        conversation=conversation,
        agent_id=conversation.agent_id,
        role=role,
        content=text,
        created_at=timezone.now() - timedelta(seconds=ago),
    )


@pytest.fixture
def both(tenant_a: Tenant, tenant_b: Tenant) -> Any:
    """A staff member of both tenants."""
    membership = MembershipFactory.create(tenant=tenant_a, role=Membership.Role.AGENT)
    MembershipFactory.create(tenant=tenant_b, user=membership.user, role=Membership.Role.AGENT)
    client = APIClient()
    client.force_login(membership.user)
    return client


@pytest.fixture
def world(owner: Persona, outsider: Persona) -> dict[str, Conversation]:
    agent_a, agent_b = agent_for(owner.tenant), agent_for(outsider.tenant, "Otro")
    rows = {
        "a_waiting": conversation_make(agent_a, thread="a1", customer_text="Mi pedido no llegó"),
        "a_bot": conversation_make(
            agent_a, status="active", thread="a2", customer_text="Horario de la tienda"
        ),
        "a_closed": conversation_make(agent_a, status="closed", thread="a3"),
        "b_waiting": conversation_make(
            agent_b, thread="b1", customer_text="Información sobre envíos a Canarias"
        ),
    }
    contact = Contact.objects.for_tenant(owner.tenant).get(pk=rows["a_bot"].contact_id)
    contact.name, contact.phone, contact.email = "María Pérez", "+34 612 345 678", "mp@x.test"
    contact.save()
    return rows


@pytest.mark.django_db
def test_tabs_and_card_json(owner_client: Any, owner: Persona, world: Any) -> None:
    assert _ids(owner_client.get(URL, {"tab": "waiting"})) == {str(world["a_waiting"].pk)}
    assert _ids(owner_client.get(URL, {"tab": "bot"})) == {str(world["a_bot"].pk)}
    assert _ids(owner_client.get(URL, {"tab": "closed"})) == {str(world["a_closed"].pk)}
    # unassigned: escalated with no holder; the bot's conversation is not "Sin asignar"
    assert _ids(owner_client.get(URL, {"tab": "unassigned"})) == {str(world["a_waiting"].pk)}
    assert _ids(owner_client.get(URL, {"tab": "mine"})) == set()
    owner_client.post(f"{URL}/{world['a_waiting'].pk}/claim", {}, format="json")
    assert _ids(owner_client.get(URL, {"tab": "mine"})) == {str(world["a_waiting"].pk)}
    # claimed but unanswered: the customer still waits (and nobody else may take it)
    assert _ids(owner_client.get(URL, {"tab": "waiting"})) == {str(world["a_waiting"].pk)}
    assert _ids(owner_client.get(URL, {"tab": "unassigned"})) == set()
    reply = {"text": "Lo miro ahora mismo"}
    answered = owner_client.post(f"{URL}/{world['a_waiting'].pk}/reply", reply, format="json")
    assert answered.status_code in (200, 201), answered.content
    assert _ids(owner_client.get(URL, {"tab": "waiting"})) == set()  # answered by a person
    card = owner_client.get(URL, {"tab": "bot"}).json()["results"][0]
    assert card["contact"]["display_name"] == "María Pérez"
    assert card["contact"]["phone"] == "+34 612 345 678"
    assert card["tenant"]["name"] == owner.tenant.name
    assert card["channel_label"] == "API"
    assert card["status_label"] == "activa"
    assert card["last_message_preview"] == "Horario de la tienda"
    assert card["unread_count"] == 1
    mine = owner_client.get(URL, {"tab": "mine"}).json()["results"][0]
    # Waiting for a person: the card previews what the customer asked, not the bot's notice.
    assert mine["last_message_preview"] == "Mi pedido no llegó"
    assert mine["assigned_to"]["email"] == owner.user.email
    assert mine["claimed_at"] and mine["claim_expires_at"]
    assert mine["priority_label"] == "Alta"


@pytest.mark.django_db
def test_waiting_tab_sorted_by_waiting_time(owner: Persona, owner_client: Any) -> None:
    agent = agent_for(owner.tenant)
    recent = conversation_make(agent, thread="r", escalated_minutes_ago=2)
    oldest = conversation_make(agent, thread="o", escalated_minutes_ago=50)
    middle = conversation_make(agent, thread="m", escalated_minutes_ago=10)
    body = owner_client.get(URL, {"tab": "waiting", "limit": 2}).json()
    assert [r["id"] for r in body["results"]] == [str(oldest.pk), str(middle.pk)]
    rest = owner_client.get(body["next"]).json()
    assert [r["id"] for r in rest["results"]] == [str(recent.pk)]


@pytest.mark.django_db
def test_filters(owner_client: Any, owner: Persona, world: Any) -> None:
    a_bot = world["a_bot"]
    assert _ids(owner_client.get(URL, {"status": "closed"})) == {str(world["a_closed"].pk)}
    every = {str(world[k].pk) for k in ("a_waiting", "a_bot", "a_closed")}
    assert _ids(owner_client.get(URL, {"status": "all"})) == every == _ids(owner_client.get(URL))
    assert _ids(owner_client.get(URL, {"channel": "whatsapp"})) == set()
    assert len(_ids(owner_client.get(URL, {"agent": str(a_bot.agent_id)}))) == 3
    assert _ids(owner_client.get(URL, {"contact": str(a_bot.contact_id)})) == {str(a_bot.pk)}
    assert _ids(owner_client.get(URL, {"assigned": "none"})) == _ids(owner_client.get(URL))
    assert _ids(owner_client.get(URL, {"assigned": str(owner.user.pk)})) == set()
    today = timezone.localdate(timezone=ZoneInfo(owner.tenant.timezone)).isoformat()
    assert len(_ids(owner_client.get(URL, {"from": today}))) == 3
    assert _ids(owner_client.get(URL, {"to": "2001-01-01"})) == set()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"tab": "todo"}, "tab"),
        ({"status": "open"}, "status"),
        ({"channel": "fax"}, "channel"),
        ({"agent": "nope"}, "agent"),
        ({"assigned": "someone"}, "assigned"),
        ({"from": "ayer"}, "from"),
        ({"to": "2026-13-45"}, "to"),
        ({"q": "x" * 201}, "q"),
        ({"tenant": "999999"}, "tenant"),
    ],
)
def test_bad_filters_are_400_in_words(
    owner_client: Any, world: Any, params: dict[str, str], field: str
) -> None:
    response = owner_client.get(URL, params)
    assert response.status_code == 400, response.content
    text = response.content.decode()
    assert field in text and "Traceback" not in text


@pytest.fixture(params=["rare", "common"])
def word_plan(request: Any, monkeypatch: Any) -> str:
    """Both ways a message match is tested: a hashed set (rare word) and a probe per
    conversation (common word: the threshold lowered to one message)."""
    if request.param == "common":
        monkeypatch.setattr(conversation_search, "COMMON_WORD_MESSAGES", 1)
    return str(request.param)


@pytest.mark.django_db
def test_search_text_accents_name_phone_email(
    owner_client: Any, world: Any, word_plan: str
) -> None:
    waiting, bot = str(world["a_waiting"].pk), str(world["a_bot"].pk)
    _say(world["a_waiting"], "¿Dónde está la factura de diciembre?")
    assert _ids(owner_client.get(URL, {"q": "pedido"})) == {waiting}
    assert _ids(owner_client.get(URL, {"q": "donde esta la factura"})) == {waiting}
    assert _ids(owner_client.get(URL, {"q": "maria perez"})) == {bot}
    assert _ids(owner_client.get(URL, {"q": "612 345"})) == {bot}
    assert _ids(owner_client.get(URL, {"q": "612345678"})) == {bot}
    assert _ids(owner_client.get(URL, {"q": "mp@x.test"})) == {bot}
    assert _ids(owner_client.get(URL, {"q": "Canarias"})) == set()  # tenant B's text
    assert _ids(owner_client.get(URL, {"q": "inexistente"})) == set()


@pytest.mark.django_db
def test_member_of_two_tenants_sees_both_and_filters_one(
    both: Any, world: Any, tenant_a: Tenant, tenant_b: Tenant, word_plan: str
) -> None:
    rows = both.get(URL, {"tab": "waiting"}).json()["results"]
    assert {r["tenant"]["name"] for r in rows} == {tenant_a.name, tenant_b.name}
    assert _ids(both.get(URL, {"q": "envios"})) == {str(world["b_waiting"].pk)}
    assert _ids(both.get(URL, {"q": "envios", "tenant": tenant_a.pk})) == set()
    assert _ids(both.get(URL, {"q": "pedido", "tenant": tenant_b.pk})) == set()
    assert _ids(both.get(URL, {"q": "pedido", "tenant": tenant_a.pk})) == {
        str(world["a_waiting"].pk)
    }
    only_b = both.get(URL, HTTP_X_TENANT=tenant_b.slug).json()["results"]
    assert {r["tenant"]["id"] for r in only_b} == {tenant_b.pk}
    detail = both.get(f"{URL}/{world['b_waiting'].pk}")
    assert detail.status_code == 200


@pytest.mark.django_db
def test_api_keys_and_outsiders_see_only_their_tenant(
    api_a: Any, api_b: Any, outsider_client: Any, world: Any
) -> None:
    a_ids = _ids(api_a.get(URL))
    assert str(world["b_waiting"].pk) not in a_ids and len(a_ids) == 3
    assert _ids(api_b.get(URL, {"q": "pedido"})) == set()
    assert _ids(outsider_client.get(URL)) == {str(world["b_waiting"].pk)}
    assert outsider_client.get(f"{URL}/{world['a_waiting'].pk}").status_code == 404
    assert api_a.get(URL).json()["results"][0]["unread_count"] is None
    assert api_a.get(URL, {"assigned": "me"}).status_code == 400
    assert api_a.get(URL, {"tab": "mine"}).status_code == 400


@pytest.mark.django_db
def test_opening_marks_read(owner_client: Any, world: Any) -> None:
    conversation = world["a_waiting"]

    def unread() -> int:
        rows = owner_client.get(URL, {"tab": "waiting"}).json()["results"]
        return int(rows[0]["unread_count"])

    assert unread() == 1
    assert owner_client.get(f"{URL}/{conversation.pk}").status_code == 200
    assert unread() == 0
    _say(conversation, "¿Hay alguien?")
    _say(conversation, "Respuesta del equipo", role="assistant")
    assert unread() == 1
    marked = owner_client.post(f"{URL}/{conversation.pk}/read", {}, format="json")
    assert marked.status_code == 200 and marked.json()["unread_count"] == 0
    assert unread() == 0


@pytest.mark.django_db
def test_opening_the_inbox_page_marks_read_for_that_member_only(
    owner: Persona, owner_client: Any, member_client: Any, world: Any
) -> None:
    conversation = world["a_waiting"]
    page = Client()
    page.force_login(owner.user)
    assert page.get(f"/inbox/{conversation.pk}").status_code == 200

    def unread(client: Any) -> int:
        rows = client.get(URL, {"tab": "waiting"}).json()["results"]
        return int(rows[0]["unread_count"])

    assert unread(owner_client) == 0
    assert unread(member_client) == 1


@pytest.mark.django_db
def test_cards_speak_english_when_asked(owner: Persona, owner_client: Any) -> None:
    agent = agent_for(owner.tenant)
    conversation = conversation_make(agent, channel="webchat", thread="w1")
    Contact.objects.for_tenant(owner.tenant).filter(pk=conversation.contact_id).update(name="")
    card = owner_client.get(URL, HTTP_ACCEPT_LANGUAGE="en").json()["results"][0]
    assert card["channel_label"] == "Web chat"
    assert card["status_label"] == "escalated"
    assert card["priority_label"] == "High"
    assert card["contact"]["display_name"].startswith("Web visitor ")
    spanish = owner_client.get(URL, HTTP_ACCEPT_LANGUAGE="es").json()["results"][0]
    assert spanish["contact"]["display_name"].startswith("Visitante web ")
    assert spanish["contact"]["display_name"][-4:] == card["contact"]["display_name"][-4:]
    bad = owner_client.get(URL, {"tab": "x"}, HTTP_ACCEPT_LANGUAGE="en")
    assert bad.status_code == 400 and "Invalid value for tab" in bad.content.decode()


@pytest.mark.django_db
def test_whatsapp_cards_carry_the_window_in_words(owner: Persona, owner_client: Any) -> None:
    agent = agent_for(owner.tenant)
    wa = conversation_make(agent, channel="whatsapp", thread="wa1")
    web = conversation_make(agent, channel="webchat", thread="w1")
    rows = Conversation.objects.for_tenant(owner.tenant)
    rows.filter(pk=wa.pk).update(last_inbound_at=timezone.now() - timedelta(hours=23, minutes=30))

    def labels(language: str) -> dict[str, str]:
        response = owner_client.get(URL, HTTP_ACCEPT_LANGUAGE=language)
        return {row["id"]: row["window_label"] for row in response.json()["results"]}

    assert labels("es") == {str(wa.pk): "Ventana: 0 h 30 min", str(web.pk): ""}
    rows.filter(pk=wa.pk).update(last_inbound_at=timezone.now() - timedelta(hours=24, minutes=1))
    assert labels("es")[str(wa.pk)] == "Ventana cerrada — solo plantillas"
    assert labels("en")[str(wa.pk)] == "Window closed — templates only"
