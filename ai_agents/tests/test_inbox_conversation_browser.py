"""The conversation page's team tools in Debian's Chromium under uvicorn (live events):

- the owner assigns the conversation to the agent with the page's picker; the agent's open
  page says it is theirs without a reload and the agent replies; the owner's page shows who
  holds it, with the reply box closed;
- an internal note written in the page shows in note style, for a colleague too (live), and
  the web chat customer never sees it; on WhatsApp the Graph API receives the reply written
  right after it, never the note;
- "/" + shortcut in the composer opens the canned replies (keyboard listbox); Enter inserts
  the reply with the contact's and the staff member's names; the customer receives it.
The phone layout and axe checks of these states are in `test_inbox_conversation_layout.py`.
"""

from __future__ import annotations

import time
from typing import Any

from django.test import Client
from playwright.sync_api import expect

from ai_agents.models import ChannelBinding, Contact, Conversation, ConversationNote, Message
from ai_agents.services.canned_replies import canned_reply_create
from ai_agents.tests.channels.webchat.support import ORIGIN, Visitor, respond, webchat_binding
from ai_agents.tests.channels.whatsapp.support import Line
from ai_agents.tests.handoff_helpers import agent_for, conversation_make, fresh
from erp.tenancy.scoping import tenant_scope
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

NOTE = "Cliente difícil: no ofrecer descuento"
NOTE_YELLOW = "rgb(255, 244, 194)"


def staff_page(browser: Any, base: str, persona: Persona, path: str, **options: Any) -> Any:
    """A staff member's own browser context, logged in on `path`, with live events."""
    context = context_new(browser, base_url=base, **options)
    page = context.new_page()
    admin_login(page, persona, path)
    expect(page.locator("html")).to_have_attribute("data-inbox-live", "live")
    return page


def web_chat_conversation(tenant: Any, fake_google: FakeGoogle) -> tuple[Visitor, Conversation]:
    """A visitor who said hello in the web chat (the bot answered), named María."""
    binding: ChannelBinding = webchat_binding(tenant, "Lucía", [ORIGIN])
    visitor = Visitor(binding)
    assert visitor.start().status_code == 200
    respond(fake_google, "Hola, ¿en qué le ayudo?")
    assert visitor.say("Hola, quiero cambiar la dirección de entrega").status_code == 200
    with tenant_scope(tenant):
        conversation = Conversation.objects.get()
        Contact.objects.filter(pk=conversation.contact_id).update(name="María")
    return visitor, conversation


def customer_texts(visitor: Visitor) -> list[str]:
    history = visitor.history()
    assert history.status_code == 200
    return [m["text"] for m in history.json()["messages"]]


def test_the_owner_assigns_to_the_agent_whose_open_page_turns_theirs_live(
    browser: Any, asgi_server: str, owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), thread="maria")
    path = f"/inbox/{conversation.pk}"
    agent = staff_page(browser, asgi_server, member, path)
    boss = staff_page(browser, asgi_server, owner, path)
    try:
        expect(agent.locator("#inbox-reply-text")).to_be_disabled()
        agent.evaluate("window.__sameDocument = true")

        boss.locator("#inbox-assign-toggle").click()
        expect(boss.locator("#inbox-assign-toggle")).to_have_attribute("aria-expanded", "true")
        boss.get_by_label("Asignar a", exact=True).select_option(member.user.email)
        boss.locator("#inbox-assign-confirm").click()
        expect(boss.locator("#inbox-notice")).to_have_text(
            f"Conversación asignada a {member.user.email}."
        )
        expect(boss.locator("#inbox-holder")).to_contain_text(f"Atendida por {member.user.email}")
        expect(boss.locator("#inbox-assign")).to_be_hidden()
        for control in ("#inbox-reply-text", "#inbox-send", "#inbox-claim", "#inbox-assign-toggle"):
            expect(boss.locator(control)).to_be_disabled()

        expect(agent.locator("#inbox-notice")).to_have_text("Asignada a usted: ya puede responder.")
        expect(agent.locator("#inbox-holder")).to_contain_text("La atiende usted desde")
        assert agent.evaluate("window.__sameDocument") is True  # no reload
        agent.get_by_label("Su respuesta").fill("Hola María, me la han pasado a mí.")
        agent.locator("#inbox-send").click()
        expect(boss.locator('#inbox-messages li[data-kind="person"]')).to_contain_text(
            "me la han pasado a mí"
        )
    finally:
        agent.context.close()
        boss.context.close()

    assert fresh(conversation).assigned_to_id == member.user.pk
    with tenant_scope(owner.tenant):
        reply = Message.objects.get(author__isnull=False)
    assert reply.author_id == member.user.pk
    assert reply.content == "Hola María, me la han pasado a mí."


def test_a_note_written_in_the_page_stays_with_the_team(
    browser: Any, asgi_server: str, owner: Persona, member: Persona, fake_google: FakeGoogle
) -> None:
    visitor, conversation = web_chat_conversation(owner.tenant, fake_google)
    path = f"/inbox/{conversation.pk}"
    colleague = staff_page(browser, asgi_server, member, path)
    page = staff_page(browser, asgi_server, owner, path)
    try:
        # A note needs no claim: the reply box is closed, the note box is open.
        expect(page.locator("#inbox-reply-text")).to_be_disabled()
        page.get_by_label("Nota interna", exact=True).check()
        expect(page.locator("#inbox-reply-form")).to_have_attribute("data-mode", "note")
        box = page.get_by_label("Nota interna (solo para el equipo)")
        expect(box).to_be_enabled()
        assert box.evaluate("e => getComputedStyle(e).backgroundColor") == NOTE_YELLOW
        box.fill(NOTE)
        page.get_by_role("button", name="Guardar nota").click()
        expect(page.locator("#inbox-notice")).to_have_text("Nota interna guardada.")
        expect(box).to_have_value("")

        for viewer in (page, colleague):
            note = viewer.locator('#inbox-messages li[data-kind="note"]')
            expect(note).to_contain_text(NOTE)
            expect(note).to_contain_text(f"Nota interna · {owner.user.email}")
            assert note.evaluate("e => getComputedStyle(e).backgroundColor") == NOTE_YELLOW
    finally:
        page.context.close()
        colleague.context.close()

    with tenant_scope(owner.tenant):
        assert ConversationNote.objects.get().text == NOTE
        assert not Message.objects.filter(content__contains="descuento").exists()
    texts = customer_texts(visitor)
    assert texts and all("descuento" not in text for text in texts)
    assert "descuento" not in visitor.history().content.decode()


def _note_then_reply(page: Any, reply: str) -> None:
    """Claim, save NOTE in note mode, then send `reply` in reply mode, all in the page."""
    page.locator("#inbox-claim").click()
    expect(page.locator("#inbox-holder")).to_have_attribute("data-mine", "true")
    page.locator("#inbox-mode-note").check()
    page.locator("#inbox-reply-text").fill(NOTE)
    page.locator("#inbox-send").click()
    expect(page.locator('#inbox-messages li[data-kind="note"]')).to_contain_text(NOTE)
    page.locator("#inbox-mode-reply").check()
    expect(page.locator("#inbox-reply-form")).to_have_attribute("data-mode", "reply")
    page.locator("#inbox-reply-text").fill(reply)
    page.locator("#inbox-send").click()
    expect(page.locator('#inbox-messages li[data-kind="person"]')).to_contain_text(reply)


def _bodies(fake_graph: FakeGraph, since: int) -> list[Any]:
    return [sent.get("text", {}).get("body") for sent in fake_graph.sent[since:]]


def test_a_note_on_whatsapp_never_reaches_the_graph_api(
    browser: Any,
    asgi_server: str,
    client: Client,
    wa_binding: ChannelBinding,
    owner: Persona,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    from erp.celery import app

    Line(client, owner.tenant, fake_google, fake_graph, run_tasks).customer_writes("Hola.")
    conversation = Conversation.objects.for_tenant(owner.tenant).get()
    before = len(fake_graph.sent)
    page = staff_page(browser, asgi_server, owner, f"/inbox/{conversation.pk}")
    previous, app.conf.task_always_eager = app.conf.task_always_eager, True  # as a worker would
    try:
        _note_then_reply(page, "Le ayudo yo.")
        deadline = time.monotonic() + 10
        while "Le ayudo yo." not in _bodies(fake_graph, before) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        app.conf.task_always_eager = previous
        page.context.close()

    assert "Le ayudo yo." in _bodies(fake_graph, before)
    assert all("descuento" not in str(request.json()) for request in fake_graph.requests)


def test_a_canned_reply_goes_out_with_the_names_filled_in(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona, fake_google: FakeGoogle
) -> None:
    owner.user.first_name, owner.user.last_name = "Ana", "García"
    owner.user.save()
    visitor, conversation = web_chat_conversation(owner.tenant, fake_google)
    for tenant_id, shortcut, title in (
        (owner.tenant.pk, "saludo", "Saludo con nombre"),
        (owner.tenant.pk, "envio", "Plazos de envío"),
        (outsider.tenant.pk, "salida", "De otra empresa"),
    ):
        canned_reply_create(
            tenant_id=tenant_id,
            shortcut=shortcut,
            title=title,
            text="Hola {{contact.name}}, soy {{agent.name}}. ¿En qué le ayudo?",
        )
    page = staff_page(browser, asgi_server, owner, f"/inbox/{conversation.pk}")
    try:
        page.locator("#inbox-claim").click()
        box = page.get_by_label("Su respuesta")
        expect(box).to_be_enabled()
        box.press_sequentially("/")
        options = page.get_by_role("listbox", name="Respuestas guardadas").get_by_role("option")
        expect(options).to_have_count(2)  # the tenant's own; never the other company's
        expect(box).to_have_attribute("aria-activedescendant", "inbox-canned-0")
        box.press("ArrowDown")
        expect(box).to_have_attribute("aria-activedescendant", "inbox-canned-1")
        expect(options.nth(1)).to_have_attribute("aria-selected", "true")
        box.press_sequentially("sal")
        expect(options).to_have_count(1)
        expect(options.first).to_contain_text("/saludo")
        box.press("Enter")
        expect(box).to_have_value("Hola María, soy Ana García. ¿En qué le ayudo?")
        expect(page.locator("#inbox-canned")).to_be_hidden()
        page.locator("#inbox-send").click()
        expect(page.locator('#inbox-messages li[data-kind="person"]')).to_contain_text(
            "Hola María, soy Ana García."
        )
    finally:
        page.context.close()

    assert "Hola María, soy Ana García. ¿En qué le ayudo?" in customer_texts(visitor)
