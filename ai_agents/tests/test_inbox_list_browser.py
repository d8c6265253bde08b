"""The inbox list in Debian's Chromium (Playwright): the waiting tab oldest first, search (an
accent-less query finds an accented message; another tenant's conversation never shows), j/k,
Enter and "/", "cargar más", a member of two tenants (tenant named on each card, and WhatsApp's
window in words) in English, the contact page, and the phone (390x844) and laptop (1366x768)
layouts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone

from ai_agents.inbox import list_views
from ai_agents.models import Conversation
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.models import Membership
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, PHONE, admin_login, context_new
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

CARD_IDS = "els => els.map(e => e.dataset.conversationId)"


def _card_ids(page: Any) -> list[str]:
    return list(page.locator("#inbox-cards .inbox-card").evaluate_all(CARD_IDS))


def _waiting_three(persona: Persona) -> list[Conversation]:
    """Three conversations waiting for a person (oldest first) and one with the bot."""
    agent = agent_for(persona.tenant)
    oldest = conversation_make(
        agent,
        thread="ana",
        escalated_minutes_ago=95,
        customer_text="Necesito información del envío",
    )
    middle = conversation_make(agent, thread="bea", escalated_minutes_ago=30, reason="loop")
    recent = conversation_make(agent, thread="carla", escalated_minutes_ago=2)
    conversation_make(agent, thread="bot", status="active", customer_text="¿Abren el domingo?")
    return [oldest, middle, recent]


def test_waiting_tab_keys_search_and_more(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona, monkeypatch: Any
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setattr(list_views, "PAGE_SIZE", 2)
    context = context_new(browser, base_url=asgi_server)
    page = context.new_page()
    waiting = _waiting_three(owner)
    theirs = conversation_make(
        agent_for(outsider.tenant), thread="ajeno", customer_text="Más información del envío"
    )

    admin_login(page, owner, "/inbox/")
    current = page.locator('.inbox-tabs a[aria-current="page"]')
    expect(current).to_contain_text("Esperando respuesta")
    expect(current.locator(".count")).to_have_text("3")
    expect(page.locator('[data-count="bot"]')).to_have_text("1")
    # Oldest first, two per page here; "Cargar más" brings the third without a reload.
    expect(page.locator("#inbox-cards .inbox-card")).to_have_count(2)
    assert _card_ids(page) == [str(c.pk) for c in waiting[:2]]
    first = page.locator(f'[data-conversation-id="{waiting[0].pk}"]')
    expect(first).to_contain_text("Cliente ana")
    expect(first).to_contain_text("Esperando 1")  # "Esperando 1 hora, 35 minutos"
    expect(first).to_contain_text("El cliente pidió una persona")
    expect(first).to_contain_text("Prioridad Alta")
    page.locator("#inbox-more").click()
    expect(page.locator("#inbox-cards .inbox-card")).to_have_count(3)
    assert _card_ids(page) == [str(c.pk) for c in waiting]
    expect(page.locator("#inbox-more")).to_be_hidden()

    # j/k move the selection, Enter opens it.
    page.locator("body").press("j")
    page.keyboard.press("j")
    expect(page.locator(".inbox-card.selected")).to_have_attribute(
        "data-conversation-id", str(waiting[1].pk)
    )
    page.keyboard.press("k")
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator(".inbox-card.selected")).to_have_attribute(
        "data-conversation-id", str(waiting[2].pk)
    )
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/inbox/{waiting[2].pk}")
    page.go_back()

    _search_finds_ours_only(page, ours=waiting[0], theirs=theirs)
    context.close()


def _search_finds_ours_only(page: Any, *, ours: Conversation, theirs: Conversation) -> None:
    """The "/" key goes to the search box; accent-less words find the accented message, ours
    only; the search survives a reload and a change of tab."""
    from playwright.sync_api import expect

    page.keyboard.press("/")
    expect(page.locator("#inbox-q")).to_be_focused()
    page.keyboard.type("informacion envio")
    page.keyboard.press("Enter")
    page.wait_for_url("**q=informacion+envio**")
    expect(page.locator("#inbox-cards .inbox-card")).to_have_count(1)
    assert _card_ids(page) == [str(ours.pk)]
    expect(page.locator(f'[data-conversation-id="{theirs.pk}"]')).to_have_count(0)
    expect(page.locator('[data-count="waiting"]')).to_have_text("1")
    page.reload()  # the state is in the URL
    expect(page.locator("#inbox-q")).to_have_value("informacion envio")
    assert _card_ids(page) == [str(ours.pk)]
    # The other tabs keep the search; nothing with the bot matches it.
    page.locator('.inbox-tabs a[data-tab="bot"]').click()
    expect(page.locator("#inbox-empty")).to_have_text(
        "Ninguna conversación coincide con la búsqueda o los filtros."
    )
    assert "Más información" not in page.content()


def test_a_member_of_two_tenants_in_english_and_the_contact_page(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    ours = conversation_make(
        agent_for(owner.tenant), channel="whatsapp", thread="ana", escalated_minutes_ago=40
    )
    theirs = conversation_make(
        agent_for(outsider.tenant), channel="whatsapp", thread="bob", escalated_minutes_ago=10
    )
    Conversation.objects.for_tenant(outsider.tenant).filter(pk=theirs.pk).update(
        last_inbound_at=timezone.now() - timedelta(hours=25)
    )
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.AGENT)
    context = context_new(browser, base_url=asgi_server, locale="en-US")
    try:
        page = context.new_page()
        admin_login(page, outsider, "/inbox/")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator('.inbox-tabs a[aria-current="page"]')).to_contain_text("Awaiting reply")
        for text in ("Mine", "Unassigned", "With the bot", "Closed/expired"):
            expect(page.locator(".inbox-tabs")).to_contain_text(text)
        assert _card_ids(page) == [str(ours.pk), str(theirs.pk)]
        ours_card = page.locator(f'[data-conversation-id="{ours.pk}"]')
        expect(ours_card.locator(".tenant")).to_have_text("Acme")
        expect(page.locator(f'[data-conversation-id="{theirs.pk}"] .tenant')).to_have_text("Globex")
        expect(ours_card).to_contain_text("High priority")
        expect(ours_card).to_contain_text("Waiting 40")
        # WhatsApp's 24-hour window on each card, in words (the closed one stands out)
        expect(ours_card.locator(".window")).to_have_text("Window: 23 h 20 min")
        theirs_window = page.locator(f'[data-conversation-id="{theirs.pk}"] .window')
        expect(theirs_window).to_have_text("Window closed — templates only")
        expect(theirs_window).to_have_css("color", "rgb(165, 29, 45)")
        assert "Esperando" not in page.locator("#inbox-cards").inner_text()
        assert axe_check(page) == []

        ours_card.locator(".contact-link").click()
        page.wait_for_url(f"**/inbox/contacts/{ours.contact_id}")
        expect(page.locator("h1")).to_have_text("Cliente ana")
        expect(page.locator("#contact-tenant")).to_have_text("Acme")
        assert _card_ids(page) == [str(ours.pk)]
        expect(page.locator(".contact-link")).to_have_count(0)  # no link to this very page
        page.screenshot(path=str(tmp_path / "contact_en.png"), full_page=True)
        assert axe_check(page) == []
    finally:
        context.close()


def _small_targets(page: Any) -> list[str]:
    """Visible links, buttons, fields and summaries of the page's content under 44 px high."""
    return list(
        page.evaluate(
            """() => [...document.querySelectorAll(
                  '#content a, #content button, #content input, #content select, #content summary')]
                .filter(e => e.offsetParent !== null && !e.closest('.visually-hidden, dialog'))
                .filter(e => e.getBoundingClientRect().height < 44)
                .map(e => e.outerHTML.slice(0, 80))"""
        )
    )


def test_the_list_on_a_phone_and_a_laptop(
    browser: Any, asgi_server: str, owner: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    waiting = _waiting_three(owner)
    phone = context_new(browser, base_url=asgi_server, **PHONE)
    try:
        page = phone.new_page()
        admin_login(page, owner, "/inbox/")
        expect(page.locator("#inbox-cards .inbox-card")).to_have_count(3)
        # One column, nothing wider than the screen; filters folded away until asked for.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        expect(page.locator("#inbox-filter-panel")).not_to_have_attribute("open", "")
        expect(page.locator("#inbox-channel-filter")).to_be_hidden()
        expect(page.locator("#inbox-q-hint")).to_be_hidden()  # no keys hint on a phone
        assert _small_targets(page) == []
        font = page.locator("#inbox-q").evaluate("e => getComputedStyle(e).fontSize")
        assert font == "16px"
        box = page.locator(f'[data-conversation-id="{waiting[0].pk}"]').bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        page.screenshot(path=str(tmp_path / "inbox_list_phone.png"), full_page=True)

        page.locator("#inbox-filter-panel summary").click()
        expect(page.locator("#inbox-channel-filter")).to_be_visible()
        assert _small_targets(page) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        select_font = page.locator("#inbox-channel-filter").evaluate(
            "e => getComputedStyle(e).fontSize"
        )
        assert select_font == "16px"
        page.screenshot(path=str(tmp_path / "inbox_list_phone_filters.png"), full_page=True)
        assert axe_check(page) == []
    finally:
        phone.close()

    laptop = context_new(browser, base_url=asgi_server, viewport={"width": 1366, "height": 768})
    try:
        page = laptop.new_page()
        admin_login(page, owner, "/inbox/?channel=api")
        expect(page.locator("#inbox-filter-panel")).to_have_attribute("open", "")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1366
        tops = page.locator(".filter-grid label").evaluate_all(
            "els => els.map(e => Math.round(e.getBoundingClientRect().top))"
        )
        assert len(set(tops)) == 1  # the five filters side by side
        page.screenshot(path=str(tmp_path / "inbox_list_laptop.png"), full_page=True)
    finally:
        laptop.close()


def test_a_new_waiting_conversation_appears_without_a_reload(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona
) -> None:
    """The list re-reads its cards on a live inbox event (SSE under ASGI, as in production):
    the new card takes its place by waiting time and the counts follow; another tenant's
    event changes nothing."""
    from playwright.sync_api import expect

    from ai_agents.services.inbox_events import inbox_event_publish

    agent = agent_for(owner.tenant)
    recent = conversation_make(agent, thread="recent", escalated_minutes_ago=1)
    context = context_new(browser, base_url=asgi_server)
    try:
        page = context.new_page()
        admin_login(page, owner, "/inbox/")
        expect(page.locator("html")).to_have_attribute("data-inbox-live", "live")
        assert _card_ids(page) == [str(recent.pk)]

        older = conversation_make(agent, thread="older", escalated_minutes_ago=20)
        inbox_event_publish(tenant_id=owner.tenant.pk, conversation_id=older.pk, kind="status")
        expect(page.locator("#inbox-cards .inbox-card")).to_have_count(2)
        assert _card_ids(page) == [str(older.pk), str(recent.pk)]
        expect(page.locator('[data-count="waiting"]')).to_have_text("2")

        theirs = conversation_make(agent_for(outsider.tenant), thread="ajeno")
        inbox_event_publish(tenant_id=outsider.tenant.pk, conversation_id=theirs.pk, kind="status")
        page.wait_for_timeout(1500)
        expect(page.locator(f'[data-conversation-id="{theirs.pk}"]')).to_have_count(0)
        expect(page.locator('[data-count="waiting"]')).to_have_text("2")
    finally:
        context.close()
