"""The staff inbox pages in Debian's Chromium under uvicorn (live events over SSE):

- a customer asks the bot for a person: the open list page's title becomes "(1) …", the
  member's chosen notification and sound come and the row appears, without a reload; another
  tenant's escalation changes nothing; past the twenty listed, a conversation that comes back
  into the list (a newer one was answered) does not sound again;
- two staff members in two browser contexts: A claims, B's page shows who holds it and since
  when, with Reclamar and Responder disabled; Esc closes B's details panel; A answers with
  Ctrl+Enter; Esc closes the close confirmation; A closes it after confirming and B sees it
  closed;
- phone (390x844) and laptop layouts of list and conversation, Spanish and English, with
  axe-core finding no serious or critical violation (screenshots under the test's tmp dir);
- with the event stream refused, the page falls back to polling.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from ai_agents.conversations.engine import message_process
from ai_agents.conversations.inbound import Inbound
from ai_agents.inbox.alerts import WAITING_SHOWN
from ai_agents.models import Conversation, InboxPreference, Message
from ai_agents.services import handoff
from ai_agents.services.inbox_events import inbox_event_publish
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.scoping import tenant_scope
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


def _staff_page(browser: Any, base: str, persona: Persona, path: str, **options: Any) -> Any:
    context = context_new(browser, base_url=base, **options)
    page = context.new_page()
    admin_login(page, persona, path)
    expect(page.locator("html")).to_have_attribute("data-inbox-live", "live")
    return page


def _customer_asks_for_a_person(agent: Any, name: str) -> Conversation:
    result = message_process(
        agent=agent,
        inbound=Inbound(
            text="Quiero hablar con una persona", contact={"external_id": name, "name": name}
        ),
    )
    return Conversation.objects.for_tenant(agent.tenant_id).get(pk=result.conversation_id)


def test_a_new_waiting_conversation_raises_the_title_count_without_a_reload(
    browser: Any,
    asgi_server: str,
    owner: Persona,
    member: Persona,
    outsider: Persona,
    fake_google: FakeGoogle,
) -> None:
    ours, theirs = agent_for(owner.tenant), agent_for(outsider.tenant)
    page = _staff_page(browser, asgi_server, owner, "/inbox/")
    try:
        expect(page).to_have_title("Bandeja de conversaciones")
        page.context.grant_permissions(["notifications"])
        page.get_by_role("button", name="Avisos").click()
        page.get_by_label("Aviso del navegador cuando un cliente empieza a esperar").check()
        page.get_by_label("Sonido cuando un cliente empieza a esperar").check()
        page.get_by_role("button", name="Guardar").click()
        expect(page.locator("#inbox-prefs")).not_to_be_visible()
        page.evaluate("window.__sameDocument = true")

        _customer_asks_for_a_person(theirs, "Otro")  # another tenant: nothing here
        waiting = _customer_asks_for_a_person(ours, "Marta")
        assert waiting.status == Conversation.Status.ESCALATED

        expect(page).to_have_title("(1) Bandeja de conversaciones")
        expect(page.locator("#inbox-alert-live")).to_contain_text("Marta")
        expect(page.locator("#inbox-alerts")).to_have_attribute("data-sounds-played", "1")
        expect(page.locator("#inbox-alerts")).to_have_attribute("data-notified", "1")
        assert InboxPreference.objects.get(user=owner.user).notify_desktop is True
        expect(page.locator(f'.inbox-card[data-conversation-id="{waiting.pk}"]')).to_be_visible()
        assert page.evaluate("window.__sameDocument") is True  # no reload
        assert len(fake_google.generate_requests) == 0  # the rule escalated, no model call

        # A colleague's conversation counts but does not alert; once their lease ran out it
        # is anyone's to answer: it alerts then.
        with page.expect_response(lambda r: "/inbox/waiting" in r.url):  # the page re-read it
            handoff.conversation_claim(waiting, member.user)
        expect(page.locator("#inbox-alerts")).to_have_attribute("data-notified", "1")
        Conversation.objects.for_tenant(waiting.tenant_id).filter(pk=waiting.pk).update(
            claim_expires_at=timezone.now() - timedelta(seconds=1)
        )
        inbox_event_publish(tenant_id=waiting.tenant_id, conversation_id=waiting.pk, kind="status")
        expect(page.locator("#inbox-alerts")).to_have_attribute("data-notified", "2")
        expect(page).to_have_title("(1) Bandeja de conversaciones")
    finally:
        page.context.close()


def test_past_twenty_waiting_only_a_conversation_that_starts_waiting_alerts(
    browser: Any, asgi_server: str, owner: Persona, fake_google: FakeGoogle
) -> None:
    """With more conversations waiting than `/inbox/waiting` lists, answering the newest one
    brings an older one back into the list: it waited before, so no sound for it."""
    agent = agent_for(owner.tenant)
    for n in range(WAITING_SHOWN):
        conversation_make(agent, thread=f"old-{n}", escalated_minutes_ago=60 + n)
    InboxPreference.objects.create(user=owner.user, notify_sound=True)
    page = _staff_page(browser, asgi_server, owner, "/inbox/")
    alerts = page.locator("#inbox-alerts")
    try:
        expect(page).to_have_title(f"({WAITING_SHOWN}) Bandeja de conversaciones")
        new = _customer_asks_for_a_person(agent, "Marta")
        expect(page).to_have_title(f"({WAITING_SHOWN + 1}) Bandeja de conversaciones")
        expect(alerts).to_have_attribute("data-sounds-played", "1")

        handoff.conversation_claim(new, owner.user)
        handoff.conversation_reply(new, owner.user, "Hola Marta, soy Ana.")
        expect(page).to_have_title(f"({WAITING_SHOWN}) Bandeja de conversaciones")
        expect(alerts).to_have_attribute("data-sounds-played", "1")  # the oldest is back: not new

        _customer_asks_for_a_person(agent, "Luis")
        expect(alerts).to_have_attribute("data-sounds-played", "2")
        expect(page.locator("#inbox-alert-live")).to_contain_text("Luis")
    finally:
        page.context.close()


def test_a_colleagues_claim_shows_who_and_since_when_with_the_controls_disabled(
    browser: Any, asgi_server: str, owner: Persona, member: Persona, tmp_path: Path
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), thread="maria")
    path = f"/inbox/{conversation.pk}"
    a = _staff_page(browser, asgi_server, member, path)
    b = _staff_page(browser, asgi_server, owner, path)
    try:
        expect(b.locator("#inbox-claim")).to_be_enabled()
        a.locator("#inbox-claim").click()
        expect(a.locator("#inbox-holder")).to_contain_text("La atiende usted desde")

        holder = b.locator("#inbox-holder")
        expect(holder).to_contain_text(f"Atendida por {member.user.email} desde ")
        expect(holder).to_have_attribute("data-claimed", "true")
        expect(b.locator("#inbox-claim")).to_be_disabled()
        expect(b.locator("#inbox-send")).to_be_disabled()
        expect(b.locator("#inbox-reply-text")).to_be_disabled()
        expect(b.locator("#inbox-close")).to_be_disabled()
        expect(b.get_by_text("Atendida por")).to_have_count(1)
        b.screenshot(path=tmp_path / "held-by-a-colleague.png")
        b.locator("#inbox-more-toggle").click()
        expect(b.locator("#inbox-more")).to_be_visible()
        b.keyboard.press("Escape")
        expect(b.locator("#inbox-more")).to_be_hidden()

        a.locator("#inbox-reply-text").fill("Hola María, soy yo.")
        a.locator("#inbox-reply-text").press("Control+Enter")
        expect(b.locator('#inbox-messages li[data-kind="person"]')).to_contain_text("soy yo")

        a.locator("#inbox-close").click()
        expect(a.locator("#inbox-close-dialog")).to_be_visible()
        a.keyboard.press("Escape")
        expect(a.locator("#inbox-close-dialog")).not_to_be_visible()
        expect(a.locator("#inbox-status")).to_have_text("Escalada")
        a.locator("#inbox-close").click()
        a.locator("#inbox-close-confirm").click()
        expect(a.locator("#inbox-status")).to_have_text("Cerrada")
        expect(b.locator("#inbox-status")).to_have_text("Cerrada")
    finally:
        a.context.close()
        b.context.close()


def _layout_facts(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => {
          const small = [...document.querySelectorAll('main button, main a.back, nav a.back')]
            .filter(e => e.offsetParent !== null)
            .map(e => e.getBoundingClientRect())
            .filter(r => r.height < 44 || r.width < 44).length;
          const box = document.querySelector('#inbox-reply-text');
          return {
            overflow: document.documentElement.scrollWidth - window.innerWidth,
            small_targets: small,
            input_px: box ? parseFloat(getComputedStyle(box).fontSize) : 16,
          };
        }"""
    )


@pytest.mark.parametrize("language", ["es", "en"])
def test_phone_and_laptop_layouts_in_both_languages_pass_axe(
    browser: Any, asgi_server: str, owner: Persona, tmp_path: Path, language: str
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), thread="lucia")
    with tenant_scope(owner.tenant):  # a long conversation: the composer must stay in view
        for n in range(30):
            Message.objects.create(
                tenant=owner.tenant,
                conversation=conversation,
                agent=conversation.agent,
                role="user",
                content=f"Mensaje {n}: " + "texto largo " * 12,
                created_at=timezone.now() - timedelta(minutes=30 - n),
            )
    words = {
        "es": ("Reclamar", "Volver a la bandeja", "Responder", "Avisos", "Esperando desde"),
        "en": ("Claim", "Back to the inbox", "Reply", "Alerts", "Waiting since"),
    }
    for size_name, size in (("phone", PHONE), ("laptop", LAPTOP)):
        context = context_new(browser, base_url=asgi_server, viewport=size)
        context.add_cookies([{"name": "django_language", "value": language, "url": asgi_server}])
        page = context.new_page()
        try:
            admin_login(page, owner, "/inbox/")
            assert page.locator("html").get_attribute("lang") == language
            page.screenshot(path=tmp_path / f"{language}-{size_name}-list.png", full_page=True)
            assert axe_check(page) == [], f"{language} {size_name} list"
            assert _layout_facts(page)["overflow"] <= 0

            page.goto(f"/inbox/{conversation.pk}")
            expect(page.locator("#inbox-claim")).to_have_text(words[language][0])
            expect(page.locator("#inbox-send")).to_have_text(words[language][2])
            expect(page.locator("#inbox-prefs-open")).to_have_text(words[language][3])
            expect(page.locator("#inbox-waiting-line")).to_contain_text(words[language][4])
            page.screenshot(path=tmp_path / f"{language}-{size_name}-conversation.png")
            assert axe_check(page) == [], f"{language} {size_name} conversation"
            facts = _layout_facts(page)
            assert facts["overflow"] <= 0, facts
            assert facts["input_px"] >= 16, facts
            if size_name == "phone":
                assert facts["small_targets"] == 0, facts
            expect(page.locator("#inbox-reply-text")).to_be_in_viewport()
            page.locator("body").press("u")
            page.wait_for_url("**/inbox/")
            expect(page.get_by_role("link", name=words[language][1])).to_have_count(0)
        finally:
            context.close()


def test_without_the_live_stream_the_page_falls_back_to_polling(
    browser: Any, asgi_server: str, owner: Persona
) -> None:
    from ai_agents.conversations.inbound import message_receive

    conversation = conversation_make(agent_for(owner.tenant), thread="pablo")
    context = context_new(browser, base_url=asgi_server)
    # A proxy that kills event streams: every connection to /inbox/live fails.
    context.route("**/inbox/live*", lambda route: route.abort())
    page = context.new_page()
    try:
        admin_login(page, owner, f"/inbox/{conversation.pk}")
        expect(page.locator("html")).to_have_attribute("data-inbox-live", "polling", timeout=30_000)
        message_receive(
            agent=conversation.agent,
            inbound=Inbound(text="¿Siguen ahí?", contact={"external_id": "pablo"}),
        )
        expect(page.locator('#inbox-messages li[data-kind="customer"]').last).to_contain_text(
            "¿Siguen ahí?", timeout=30_000
        )
    finally:
        context.close()
