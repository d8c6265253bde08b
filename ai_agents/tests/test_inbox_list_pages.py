"""The inbox list page (`/inbox/`) and the contact page (`/inbox/contacts/<id>`) on the server:
tabs with counts, the waiting tab's order, filters and search in the query string, cursor pages,
words instead of codes, two tenants (and a member of both), bad input as 400."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import Contact, Conversation
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.tenancy.scoping import tenant_scope
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import Persona

pytestmark = pytest.mark.django_db


def _client(persona: Persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def _ids(html: str) -> list[str]:
    return re.findall(r'<li class="inbox-card[^"]*" data-conversation-id="([^"]+)"', html)


def _unread(html: str) -> dict[str, str]:
    """{conversation id: unread count} of the cards that show a badge."""
    cards = re.findall(r'data-conversation-id="([^"]+)"[^>]*?(?:data-unread="(\d+)")?>', html)
    return {pk: n for pk, n in cards if n}


def _count(html: str, tab: str) -> int:
    found = re.search(rf'data-count="{tab}">(\d+)<', html)
    assert found, tab
    return int(found.group(1))


def test_anonymous_visitors_are_sent_to_the_login(client: Any, owner: Persona) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    for url in ("/inbox/", "/inbox/?fragment=cards", f"/inbox/contacts/{conversation.contact_id}"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/admin/login/")


def test_the_waiting_tab_is_the_default_oldest_first_with_counts_and_words(
    owner: Persona, outsider: Persona
) -> None:
    agent = agent_for(owner.tenant)
    recent = conversation_make(agent, thread="recent", escalated_minutes_ago=3)
    oldest = conversation_make(agent, thread="oldest", escalated_minutes_ago=90)
    middle = conversation_make(agent, thread="middle", escalated_minutes_ago=20, reason="loop")
    conversation_make(agent, thread="bot", status="active")
    conversation_make(agent, thread="done", status="closed")
    theirs = conversation_make(
        agent_for(outsider.tenant), thread="theirs", escalated_minutes_ago=500
    )

    html = _client(owner).get("/inbox/").content.decode()

    assert _ids(html) == [str(oldest.pk), str(middle.pk), str(recent.pk)]
    assert str(theirs.pk) not in html and "Cliente theirs" not in html
    assert (_count(html, "waiting"), _count(html, "bot"), _count(html, "closed")) == (3, 1, 1)
    # unassigned: escalated and nobody holds it (not the bot's conversation)
    assert _count(html, "unassigned") == 3 and _count(html, "mine") == 0
    assert "Cliente oldest" in html and "Esperando 1" in html  # "Esperando 1 hora, 30 minutos"
    assert "Prioridad Alta" in html and "El cliente pidió una persona" in html
    assert "user_request" not in html and ">high<" not in html  # words, never codes
    assert 'aria-current="page">Esperando respuesta' in html
    assert "Acme" not in re.sub(r"<title>.*?</title>", "", html)  # one tenant: no tenant name


def test_other_tabs_and_filters_keep_their_state_in_the_url(
    owner: Persona, member: Persona
) -> None:
    agent = agent_for(owner.tenant)
    mine = conversation_make(agent, thread="mine", channel="whatsapp")
    handoff.conversation_claim(mine, owner.user)
    bots = conversation_make(agent, thread="bot", status="active", channel="webchat")
    conversation_make(agent, thread="other", status="active", channel="whatsapp")
    client = _client(owner)

    html = client.get("/inbox/?tab=mine").content.decode()
    assert _ids(html) == [str(mine.pk)]
    assert f"Asignada a {owner.user.email}" in html

    html = client.get("/inbox/?tab=bot&channel=webchat").content.decode()
    assert _ids(html) == [str(bots.pk)]
    assert "Chat web" in html
    assert '<option value="webchat" selected>' in html
    assert 'href="?channel=webchat&amp;tab=waiting"' in html  # tabs keep the filters
    assert 'id="inbox-empty" class="empty" hidden>' in html
    html = client.get("/inbox/?tab=closed&channel=webchat").content.decode()
    assert 'class="empty">Ninguna conversación coincide con la búsqueda o los filtros.' in html
    html = client.get("/inbox/?tab=closed").content.decode()
    assert 'class="empty">Todavía no hay conversaciones cerradas ni expiradas.' in html


def test_search_is_accent_insensitive_and_never_crosses_tenants(
    owner: Persona, outsider: Persona
) -> None:
    ours = conversation_make(
        agent_for(owner.tenant), customer_text="Necesito información del envío"
    )
    conversation_make(agent_for(owner.tenant), thread="otro", customer_text="Hola")
    theirs = conversation_make(
        agent_for(outsider.tenant), thread="ajeno", customer_text="Más información, por favor"
    )

    html = _client(owner).get("/inbox/?q=informacion+envio").content.decode()
    assert _ids(html) == [str(ours.pk)]
    assert _count(html, "waiting") == 1
    assert 'value="informacion envio"' in html
    their_html = _client(outsider).get("/inbox/?q=informacion").content.decode()
    assert _ids(their_html) == [str(theirs.pk)]


def test_a_member_of_two_tenants_sees_both_with_the_tenant_named(
    owner: Persona, outsider: Persona
) -> None:
    ours = conversation_make(agent_for(owner.tenant), thread="ana")
    theirs = conversation_make(agent_for(outsider.tenant), thread="bob")
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.AGENT)

    html = _client(outsider).get("/inbox/").content.decode()
    assert set(_ids(html)) == {str(ours.pk), str(theirs.pk)}
    assert '<span class="tenant">Acme</span>' in html
    assert f'<span class="tenant">{outsider.tenant.name}</span>' in html
    assert 'id="inbox-tenant-filter"' in html
    assert f'<option value="{owner.tenant.pk}">Acme</option>' in html
    one = _client(outsider).get(f"/inbox/?tenant={outsider.tenant.pk}").content.decode()
    assert _ids(one) == [str(theirs.pk)]
    assert f'<option value="{outsider.tenant.pk}" selected>' in one
    assert 'id="inbox-tenant-filter"' not in _client(owner).get("/inbox/").content.decode()
    # the owner of A alone: B's conversation never, and B's id is refused in words
    response = _client(owner).get(f"/inbox/?tenant={outsider.tenant.pk}")
    assert response.status_code == 400
    assert str(theirs.pk) not in response.content.decode()


def test_cursor_pages_neither_repeat_nor_skip(owner: Persona) -> None:
    agent = agent_for(owner.tenant)
    made = [
        conversation_make(agent, thread=f"c{i}", escalated_minutes_ago=100 - i) for i in range(7)
    ]
    client = _client(owner)

    first = client.get("/inbox/?fragment=cards&tab=waiting&limit=3").json()
    seen = _ids(first["html"])
    cursor = first["next"]
    while cursor:
        page = client.get(f"/inbox/?fragment=cards&tab=waiting&limit=3&after={cursor}").json()
        seen += _ids(page["html"])
        cursor = page["next"]
    assert seen == [str(c.pk) for c in made]
    assert first["counts"]["waiting"] == 7

    html = client.get("/inbox/?limit=5").content.decode()
    more = re.search(r'id="inbox-more" href="([^"]+)"', html)
    assert more and "after=" in more.group(1)
    rest = client.get("/inbox/" + more.group(1).replace("&amp;", "&")).content.decode()
    assert _ids(rest) == [str(c.pk) for c in made[5:]]


def test_bad_input_is_a_400_in_words(owner: Persona) -> None:
    client = _client(owner)
    for query, field in (
        ("channel=fax", "channel"),
        ("from=yesterday", "from"),
        ("after=not-a-cursor", "after"),
        ("q=" + "x" * 300, "q"),
        ("tenant=99999999", "tenant"),
    ):
        response = client.get(f"/inbox/?fragment=cards&{query}")
        assert response.status_code == 400, query
        error = response.json()["error"]
        assert error["code"] == "validation_error" and list(error["fields"]) == [field]
        assert error["field"] == field
        assert error["message"] and "Traceback" not in error["message"]
        page = client.get(f"/inbox/?{query}")
        assert page.status_code == 400 and 'id="inbox-filter-error"' in page.content.decode()


def test_a_tab_that_is_not_one_lands_on_the_waiting_tab(owner: Persona) -> None:
    """An old bookmark or a mistyped link opens the inbox, never an error page."""
    conversation = conversation_make(agent_for(owner.tenant), thread="ana")
    client = _client(owner)
    for tab in ("nope", "escalated", " "):
        response = client.get("/inbox/", {"tab": tab, "channel": "api"})
        assert response.status_code == 200, tab
        html = response.content.decode()
        assert 'aria-current="page">Esperando respuesta' in html
        assert _ids(html) == [str(conversation.pk)]
        assert 'name="tab" value="waiting"' in html  # the search keeps a real tab
        fragment = client.get("/inbox/", {"fragment": "cards", "tab": tab})
        assert fragment.status_code == 200 and fragment.json()["counts"]["waiting"] == 1


def test_the_contact_page_lists_every_conversation_across_channels(
    owner: Persona, outsider: Persona
) -> None:
    agent = agent_for(owner.tenant)
    first = conversation_make(agent, thread="ana-wa", channel="whatsapp", status="closed")
    with tenant_scope(owner.tenant):
        contact = Contact.objects.get(pk=first.contact_id)
        contact.name, contact.phone, contact.email = "Ana Pérez", "+34 612 345 678", "ana@x.test"
        contact.save()
    second = conversation_make(agent, thread="ana-web", channel="webchat")
    with tenant_scope(owner.tenant):
        Conversation.objects.filter(pk=second.pk).update(contact=contact)
    stranger = conversation_make(agent, thread="otra")

    response = _client(owner).get(f"/inbox/contacts/{contact.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1" in html and "Ana Pérez" in html and "+34 612 345 678" in html
    assert set(_ids(html)) == {str(first.pk), str(second.pk)}
    assert str(stranger.pk) not in html
    assert "WhatsApp" in html and "Chat web" in html and "Cerrada" in html
    # linked from the conversation page's header and from the list's card
    header = _client(owner).get(f"/inbox/{second.pk}").content.decode()
    assert f'href="/inbox/contacts/{contact.pk}" id="inbox-contact-link"' in header
    listing = _client(owner).get("/inbox/?tab=unassigned").content.decode()
    assert f'href="/inbox/contacts/{contact.pk}"' in listing

    assert _client(outsider).get(f"/inbox/contacts/{contact.pk}").status_code == 404
    assert _client(owner).get("/inbox/contacts/not-a-uuid").status_code == 404
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.AGENT)
    both = _client(outsider).get(f"/inbox/contacts/{contact.pk}").content.decode()
    assert set(_ids(both)) == {str(first.pk), str(second.pk)} and 'id="contact-tenant"' in both


def test_english_pages(owner: Persona) -> None:
    conversation_make(agent_for(owner.tenant))
    client = _client(owner)
    client.cookies["django_language"] = "en"
    html = client.get("/inbox/").content.decode()
    assert 'lang="en"' in html
    for text in ("Awaiting reply", "Mine", "Unassigned", "With the bot", "Closed/expired"):
        assert text in html, text
    assert "Esperando respuesta" not in html
    assert "High priority" in html


def test_a_staff_user_of_no_tenant_sees_an_empty_inbox_in_words(owner: Persona) -> None:
    conversation_make(agent_for(owner.tenant), thread="ana")
    client = Client()
    client.force_login(UserFactory.create(username="nobody@x.test"))

    response = client.get("/inbox/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Tu usuario no pertenece a ninguna empresa." in html
    assert _ids(html) == [] and "Cliente ana" not in html
    assert client.get("/inbox/?fragment=cards").json()["counts"]["waiting"] == 0


def test_the_page_reads_a_fixed_number_of_queries_whatever_the_cards(owner: Persona) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    agent = agent_for(owner.tenant)
    client = _client(owner)
    counts = []
    for batch in range(2):
        for i in range(3 if batch == 0 else 12):
            conversation_make(agent, thread=f"b{batch}-{i}", escalated_minutes_ago=10 + i)
        with CaptureQueriesContext(connection) as queries:
            html = client.get("/inbox/").content.decode()
        counts.append(len(queries))
    assert len(_ids(html)) == 15
    assert counts[0] == counts[1], counts  # no query per card


def test_opening_the_conversation_page_clears_its_unread_badge_for_that_member_only(
    owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), thread="ana")
    assert _unread(_client(owner).get("/inbox/").content.decode()) == {str(conversation.pk): "1"}

    assert _client(owner).get(f"/inbox/{conversation.pk}").status_code == 200

    html = _client(owner).get("/inbox/").content.decode()
    assert _ids(html) == [str(conversation.pk)] and _unread(html) == {}
    theirs = _client(member).get("/inbox/").content.decode()
    assert _unread(theirs) == {str(conversation.pk): "1"}  # still unread for the colleague


def test_each_tab_count_is_the_number_of_cards_that_tab_lists(
    owner: Persona, outsider: Persona
) -> None:
    """The counts find the search's matches as sets, the list probes conversation by
    conversation: both must agree, for message words, names, e-mails and phone digits."""
    agent = agent_for(owner.tenant)
    made = [
        conversation_make(agent, thread="a", customer_text="Quiero información del envío"),
        conversation_make(agent, thread="b", status="active", customer_text="¿Envían a Cádiz?"),
        conversation_make(agent, thread="c", status="closed", customer_text="Gracias por la info"),
        conversation_make(agent, thread="d", customer_text="Mi pedido 4411 no llega"),
    ]
    handoff.conversation_claim(made[3], owner.user)
    with tenant_scope(owner.tenant):
        Contact.objects.filter(pk=made[2].contact_id).update(
            name="Íñigo Pérez", email="inigo@envios.test", phone="+34 612 345 678"
        )
    conversation_make(agent_for(outsider.tenant), thread="x", customer_text="información envío")
    client = _client(owner)
    for q in ("informacion", "envio", "cadiz", "inigo perez", "612 345", "pedido", "nada"):
        counts = client.get(f"/inbox/?fragment=cards&q={q}").json()["counts"]
        for tab, count in counts.items():
            listed = _ids(
                client.get(f"/inbox/?fragment=cards&limit=200&tab={tab}&q={q}").json()["html"]
            )
            assert count == len(listed), (q, tab, counts)
        assert (sum(counts.values()) > 0) == (q != "nada"), (q, counts)


def test_an_absurd_limit_is_bounded_not_an_error(owner: Persona) -> None:
    conversation_make(agent_for(owner.tenant))
    client = _client(owner)
    for limit in ("0", "abc", "9" * 5000, "-3"):
        response = client.get(f"/inbox/?fragment=cards&limit={limit}")
        assert response.status_code == 200, limit
        assert len(_ids(response.json()["html"])) == 1


def test_odd_search_text_is_no_error(owner: Persona) -> None:
    conversation_make(agent_for(owner.tenant), customer_text="Hola, ¿qué tal?")
    client = _client(owner)
    for q in ("%00", "a%00b", "!!!", "%27%22%3B--", "%E2%80%AE", "el+la+de"):
        response = client.get(f"/inbox/?q={q}")
        assert response.status_code in (200, 400), q
        assert client.get(f"/inbox/?fragment=cards&q={q}").status_code in (200, 400), q


def _cards(html: str) -> dict[str, str]:
    """{conversation id: the card's HTML}."""
    found = {}
    for part in html.split('<li class="inbox-card')[1:]:
        match = re.search(r'data-conversation-id="([^"]+)"', part)
        assert match
        found[match.group(1)] = part
    return found


@pytest.mark.parametrize(
    ("language", "left", "closed"),
    [
        ("es", "Ventana: 3 h 12 min", "Ventana cerrada — solo plantillas"),
        ("en", "Window: 3 h 12 min", "Window closed — templates only"),
    ],
)
def test_whatsapp_cards_say_how_long_the_24_hour_window_stays_open(
    owner: Persona, language: str, left: str, closed: str
) -> None:
    agent = agent_for(owner.tenant)
    rows = {
        name: conversation_make(agent, channel=channel, status=status, thread=name)
        for name, channel, status in (
            ("open", "whatsapp", "escalated"),
            ("over", "whatsapp", "active"),
            ("done", "whatsapp", "closed"),
            ("web", "webchat", "escalated"),
        )
    }
    now = timezone.now()
    for name, ago in (("open", timedelta(hours=20, minutes=48)), ("over", timedelta(hours=25))):
        Conversation.objects.for_tenant(owner.tenant).filter(pk=rows[name].pk).update(
            last_inbound_at=now - ago
        )
    client = _client(owner)
    client.cookies["django_language"] = language

    cards = _cards(client.get("/inbox/", {"tab": "unassigned"}).content.decode())
    cards |= _cards(client.get("/inbox/", {"tab": "bot"}).content.decode())
    cards |= _cards(client.get("/inbox/", {"tab": "closed"}).content.decode())

    assert f'data-open="true">{left}</span>' in cards[str(rows["open"].pk)]
    assert f'data-open="false">{closed}</span>' in cards[str(rows["over"].pk)]
    # nothing can be sent to a closed conversation; other channels have no window
    for name in ("done", "web"):
        assert 'class="window"' not in cards[str(rows[name].pk)], name
