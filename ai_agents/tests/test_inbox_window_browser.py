"""The WhatsApp window in the conversation page, in Debian's Chromium under uvicorn:

- the header counts down ("Ventana: 3 h 12 min"; "Window: 3 h 12 min" in English) on a phone
  and a laptop, with no serious accessibility issue;
- a window that closes while the page is open turns into "Ventana cerrada" and the reply box
  into the template picker with no reload; the owner fills the variables (the preview follows),
  sends, the message appears in the timeline, and the fake Graph API received the template;
- the picker reads the templates again each time it opens (or on "Actualizar la lista"): one
  synced after the page loaded shows up with no reload; a failed read, a refresh asked for
  ("Lista actualizada.") or an empty list is said in words (Spanish and English).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from playwright.sync_api import expect

from ai_agents.models import ChannelBinding, Conversation, WhatsAppTemplate
from ai_agents.services.whatsapp_templates import whatsapp_templates_sync
from ai_agents.tests.channels.whatsapp.support import NUMBER_A, post, text_payload
from ai_agents.tests.channels.whatsapp.templates_support import (
    ORDER_UPDATE,
    TOKEN_A,
    WABA_A,
    account_ready,
)
from erp.celery import app
from erp.tenancy.scoping import tenant_scope
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, PHONE, admin_login, context_new
from erp.testing.fake_graph import FakeGraph
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

LAPTOP = {"viewport": {"width": 1366, "height": 768}}


def _customer_wrote(client: Client, tenant: Any, ago: timedelta) -> Conversation:
    post(client, text_payload("Hola, ¿y mi pedido?", "wamid.browser1"))
    with tenant_scope(tenant):
        conversation = Conversation.objects.get()
        Conversation.objects.filter(pk=conversation.pk).update(last_inbound_at=timezone.now() - ago)
    return conversation


def _page(browser: Any, base: str, persona: Persona, path: str, **options: Any) -> Any:
    language = options.pop("language", "es")
    context = context_new(browser, base_url=base, **options)
    context.add_cookies([{"name": "django_language", "value": language, "url": base}])
    page = context.new_page()
    admin_login(page, persona, path)
    return page


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_header_counts_down_the_window_on_phone_and_laptop(
    browser: Any,
    asgi_server: str,
    client: Client,
    wa_binding: ChannelBinding,
    owner: Persona,
    language: str,
) -> None:
    conversation = _customer_wrote(client, owner.tenant, timedelta(hours=20, minutes=48))
    words = {"es": "Ventana: 3 h 12 min", "en": "Window: 3 h 12 min"}[language]
    for size in (PHONE, LAPTOP):
        page = _page(
            browser, asgi_server, owner, f"/inbox/{conversation.pk}", language=language, **size
        )
        try:
            badge = page.locator("#inbox-window")
            expect(badge).to_have_text(words)
            expect(badge).to_be_in_viewport()
            expect(page.locator("#inbox-template-form")).to_be_hidden()
            expect(page.locator("#inbox-reply-text")).to_be_visible()
            assert axe_check(page) == []
        finally:
            page.context.close()


def test_a_closing_window_turns_the_reply_box_into_the_template_picker_that_sends(
    browser: Any,
    asgi_server: str,
    client: Client,
    wa_binding: ChannelBinding,
    owner: Persona,
    fake_graph: FakeGraph,
) -> None:
    account_ready(fake_graph, wa_binding, [ORDER_UPDATE])
    conversation = _customer_wrote(client, owner.tenant, timedelta(hours=24, seconds=-4))
    page = _page(browser, asgi_server, owner, f"/inbox/{conversation.pk}", **LAPTOP)
    previous, app.conf.task_always_eager = app.conf.task_always_eager, True  # as a worker would
    try:
        page.evaluate("window.__sameDocument = true")
        expect(page.locator("#inbox-window")).to_have_text("Ventana: 0 h 1 min")
        page.locator("#inbox-claim").click()
        expect(page.locator("#inbox-reply-text")).to_be_enabled()

        expect(page.locator("#inbox-window")).to_have_text("Ventana cerrada", timeout=10_000)
        picker = page.locator("#inbox-template-form")
        expect(picker).to_be_visible()
        expect(page.locator("#inbox-reply-text")).to_be_hidden()
        page.get_by_label("Variable 1").fill("Sheena")
        page.get_by_label("Variable 2").fill("#10423")
        expect(page.locator("#inbox-template-preview")).to_have_text(
            "Hola Sheena, su pedido #10423 ya salió."
        )
        # the whole picker fits a laptop's screen: no scrolling to find the send button
        expect(page.locator("#inbox-template-send")).to_be_in_viewport(ratio=1)
        assert axe_check(page) == []
        page.locator("#inbox-template-send").click()

        expect(page.locator("#inbox-notice")).to_have_text("Plantilla enviada.")
        sent = page.locator("#inbox-messages li.person .text")
        expect(sent).to_have_text(["Hola Sheena, su pedido #10423 ya salió."])
        assert page.evaluate("window.__sameDocument") is True  # no reload
        deadline = time.monotonic() + 10
        while not fake_graph.sent and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        app.conf.task_always_eager = previous
        page.context.close()

    [body] = fake_graph.sent
    assert body["type"] == "template"
    assert body["template"]["name"] == "order_update"
    assert body["template"]["components"][0]["parameters"] == [
        {"type": "text", "text": "Sheena"},
        {"type": "text", "text": "#10423"},
    ]


WORDS = {
    "es": {
        "closed": "Ventana cerrada",
        "hint": "La ventana de 24 horas está cerrada: solo se pueden enviar plantillas aprobadas.",
        "failed": "No se pudo cargar la lista de plantillas. Pulse «Actualizar la lista» para "
        "intentarlo de nuevo.",
        "none": "No hay plantillas aprobadas: sincronícelas en la administración.",
        "reloaded": "Lista actualizada.",
        "note": "Nota interna",
        "reply": "Responder",
    },
    "en": {
        "closed": "Window closed",
        "hint": "The 24-hour window is closed: only approved templates can be sent.",
        "failed": "The list of templates could not be loaded. Press “Refresh the list” to try "
        "again.",
        "none": "There are no approved templates: sync them in the admin.",
        "reloaded": "List refreshed.",
        "note": "Internal note",
        "reply": "Reply",
    },
}


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_picker_reads_the_templates_again_whenever_it_opens(
    browser: Any,
    asgi_server: str,
    client: Client,
    wa_binding: ChannelBinding,
    owner: Persona,
    fake_graph: FakeGraph,
    language: str,
) -> None:
    """The page loads with no template synced; one is synced while it is open: the window
    closing brings it into the picker with no reload. A failed read is said in words (the list
    known so far stays); a template Meta dropped is gone the next time the picker opens."""
    words = WORDS[language]
    account_ready(fake_graph, wa_binding, [])
    conversation = _customer_wrote(client, owner.tenant, timedelta(hours=24, seconds=-6))
    page = _page(
        browser, asgi_server, owner, f"/inbox/{conversation.pk}", language=language, **LAPTOP
    )
    try:
        page.evaluate("window.__sameDocument = true")
        select = page.locator("#inbox-template")
        hint = page.locator("#inbox-template-hint")
        expect(select.locator("option")).to_have_count(0)
        fake_graph.templates_put(WABA_A, [ORDER_UPDATE], token=TOKEN_A, number=NUMBER_A)
        whatsapp_templates_sync(binding=wa_binding)  # after the page loaded

        expect(page.locator("#inbox-window")).to_have_text(words["closed"], timeout=10_000)
        expect(page.locator("#inbox-template-form")).to_be_visible()
        expect(select.locator("option")).to_have_text(["order_update (English, en_US)"])
        expect(select).to_be_visible()
        expect(hint).to_have_text(words["hint"])
        expect(page.get_by_label("Variable 2")).to_be_visible()
        page.get_by_label("Variable 1").fill("Sheena")

        page.route("**/templates", lambda route: route.abort())
        page.locator("#inbox-template-reload").click()
        expect(hint).to_have_text(f"{words['hint']} {words['failed']}")
        expect(select.locator("option")).to_have_text(["order_update (English, en_US)"])
        expect(page.get_by_label("Variable 1")).to_have_value("Sheena")  # nothing lost
        assert axe_check(page) == []
        page.unroute("**/templates")
        page.locator("#inbox-template-reload").click()  # a list that came back says so
        expect(hint).to_have_text(f"{words['hint']} {words['reloaded']}")
        expect(page.get_by_label("Variable 1")).to_have_value("Sheena")

        WhatsAppTemplate.objects.for_tenant(owner.tenant).update(
            status=WhatsAppTemplate.Status.DELETED
        )
        page.get_by_label(words["note"], exact=True).check()
        expect(page.locator("#inbox-template-form")).to_be_hidden()
        page.get_by_label(words["reply"], exact=True).check()
        expect(hint).to_have_text(f"{words['hint']} {words['none']}")
        expect(select).to_be_hidden()
        expect(page.locator("#inbox-template-send")).to_be_disabled()
        assert page.evaluate("window.__sameDocument") is True  # no reload
    finally:
        page.context.close()
