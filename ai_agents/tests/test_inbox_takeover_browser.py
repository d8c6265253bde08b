"""The conversation page's *Tomar el control* in Debian's Chromium under uvicorn (live events):
the agent claims a conversation in their browser; the owner, in another browser context, sees
*Tomar el control*, cancels once, then confirms; the owner may reply, and the agent's open page,
without a reload, locks the reply box with the reason and shows the take-over note. The
holder line's lease end carries the tenant's UTC offset."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from ai_agents.tests.handoff_helpers import agent_for, conversation_make, fresh
from ai_agents.tests.test_inbox_conversation_browser import staff_page
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST


def test_the_owner_takes_over_and_the_agents_open_page_locks(
    browser: Any, asgi_server: str, owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), thread="maria")
    path = f"/inbox/{conversation.pk}"
    agent = staff_page(browser, asgi_server, member, path)
    boss = staff_page(browser, asgi_server, owner, path)
    try:
        expect(agent.locator("#inbox-takeover")).to_be_hidden()  # an agent never sees it
        expect(boss.locator("#inbox-takeover")).to_be_hidden()  # nobody holds it yet
        agent.evaluate("window.__sameDocument = true")
        agent.locator("#inbox-claim").click()
        expect(agent.locator("#inbox-reply-text")).to_be_enabled()
        expect(agent.locator("#inbox-claim")).to_be_hidden()  # no greyed claim on one's own

        button = boss.get_by_role("button", name="Tomar el control")
        expect(button).to_be_visible()  # the owner's page learnt of the claim (live)
        # one way in: "Tomar el control", not a greyed "Reclamar" beside it
        expect(boss.locator("#inbox-claim")).to_be_hidden()
        # the owner's locked box says who holds it and the way out, not "only notes"
        held = f"La atiende {member.user.email}: deje una nota interna o tome el control."
        expect(boss.locator("#inbox-reply-text")).to_have_attribute("placeholder", held)
        expect(boss.locator("#inbox-reply-why")).to_have_text(held)
        button.click()
        dialog = boss.get_by_role("dialog", name="¿Tomar el control de la conversación?")
        expect(dialog).to_be_visible()
        # it names whom it is taken from (learnt live: the page opened before the claim)
        taken_from = f"{member.user.email} dejará de poder responder; la conversación pasa a usted."
        expect(boss.locator("#inbox-takeover-text")).to_have_text(taken_from)
        assert axe_check(boss) == []  # the button and its dialog, for keyboards and readers
        dialog.get_by_role("button", name="Cancelar").click()
        expect(dialog).to_be_hidden()
        assert fresh(conversation).assigned_to_id == member.user.pk

        button.click()
        dialog.get_by_role("button", name="Tomar el control").click()
        expect(boss.locator("#inbox-notice")).to_have_text("Ahora atiende usted la conversación.")
        expect(boss.locator("#inbox-holder")).to_contain_text("La atiende usted desde")
        # the lease's end says its zone (the tenant's), in words and in the title
        expect(boss.locator("#inbox-holder")).to_contain_text(" UTC-6)")
        expect(boss.locator("#inbox-holder")).to_have_attribute(
            "title", "Hora de America/Mexico_City (UTC-6)"
        )
        expect(boss.locator("#inbox-reply-text")).to_be_enabled()
        expect(boss.locator("#inbox-reply-keys")).to_be_visible()
        expect(button).to_be_hidden()

        _agent_page_locked(agent, owner, member)
        assert agent.evaluate("window.__sameDocument") is True  # no reload
    finally:
        agent.context.close()
        boss.context.close()

    assert fresh(conversation).assigned_to_id == owner.user.pk


def _agent_page_locked(agent: Any, owner: Persona, member: Persona) -> None:
    """The previous holder's open page: the reply box locked with the reason, the note shown."""
    lost = f"{owner.user.email} ha tomado el control: ya no puede responder."
    expect(agent.locator("#inbox-reply-text")).to_be_disabled()
    expect(agent.locator("#inbox-reply-text")).to_have_attribute("placeholder", lost)
    expect(agent.locator("#inbox-reply-why")).to_have_text(lost)
    expect(agent.locator("#inbox-send")).to_be_disabled()
    expect(agent.locator("#inbox-reply-keys")).to_be_hidden()  # no "Ctrl+Intro envía"
    assert axe_check(agent) == []  # the locked box with its reason
    expect(agent.locator("#inbox-holder")).to_contain_text(f"Atendida por {owner.user.email}")
    note = f"{owner.user.email} tomó el control (antes: {member.user.email})"
    expect(agent.locator('#inbox-messages li[data-kind="note"]')).to_contain_text(note)
