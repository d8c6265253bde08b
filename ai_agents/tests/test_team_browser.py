"""The team page in Chromium: an owner invites an agent from the start page on a laptop in
Spanish, the agent opens the link on a phone in English, chooses a password and lands on the
start page of that tenant only; the team page on a phone in English (44 px targets, 16 px
fields, no sideways scroll); axe clean on every page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, PHONE, admin_login, context_new
from erp.testing.fixtures import Persona
from erp.testing.team import INVITE_LINK, team_roles

pytestmark = [*BROWSER_TEST, pytest.mark.usefixtures("fresh_invite_allowance")]

SMALL_TARGETS = """() => [...document.querySelectorAll(
        '#content a, #content button, #content summary, #content input, #content select')]
    .filter(e => e.offsetParent !== null)
    .filter(e => e.getBoundingClientRect().height < 44)
    .map(e => e.outerHTML.slice(0, 80))"""
SMALL_FIELDS = """() => [...document.querySelectorAll('#content input, #content select')]
    .filter(e => e.type !== 'hidden' && parseFloat(getComputedStyle(e).fontSize) < 16)
    .map(e => e.id)"""


def _fits_a_phone(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.evaluate(SMALL_TARGETS) == []
    assert page.evaluate(SMALL_FIELDS) == []


def _invite_on_a_laptop(browser: Any, base: str, owner: Persona, tmp_path: Path) -> str:
    """The owner goes from the start page's step to the team page and invites; the link."""
    from playwright.sync_api import expect

    laptop = context_new(browser, base_url=base, viewport={"width": 1366, "height": 768})
    try:
        page = laptop.new_page()
        admin_login(page, owner, "/")
        page.locator('.tenant-setup[data-tenant="acme"] li[data-step="teammate"] a').click()
        page.wait_for_url(f"{base}/team/acme/")
        expect(page.locator("h1")).to_have_text("Equipo de Acme")
        assert axe_check(page) == []
        page.get_by_label("Correo electrónico").fill("ana@acme.test")
        page.get_by_label("Rol", exact=True).select_option("agent")
        page.get_by_role("button", name="Invitar", exact=True).click()
        invitation = page.locator("#invitation")
        expect(invitation).to_contain_text("ana@acme.test está en el equipo.")
        expect(page.locator('#members li[data-email="ana@acme.test"]')).to_contain_text(
            "todavía no ha entrado"
        )
        page.screenshot(path=str(tmp_path / "team_laptop_es.png"), full_page=True)
        assert axe_check(page) == []
        expect(invitation).to_contain_text("Le hemos enviado el enlace por correo")
        assert "/password/set/" not in page.content()  # to the person's address only
        [link] = INVITE_LINK.findall(str(mail.outbox[-1].body))
        return str(link)
    finally:
        laptop.close()


def test_an_owner_invites_on_a_laptop_and_the_agent_joins_on_a_phone(
    browser: Any,
    asgi_server: str,
    owner: Persona,
    outsider: Persona,
    settings: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    settings.SITE_URL = asgi_server
    conversation_make(agent_for(outsider.tenant))
    link = _invite_on_a_laptop(browser, asgi_server, owner, tmp_path)
    assert link.startswith(f"{asgi_server}/password/set/")

    phone = context_new(browser, base_url=asgi_server, locale="en-US", **PHONE)
    try:
        page = phone.new_page()
        page.goto(link)
        expect(page.locator("h1")).to_have_text("Choose your password")
        _fits_a_phone(page)
        assert axe_check(page) == []
        page.locator("#id_new_password1").fill("pan-con-tomate-7")
        page.locator("#id_new_password2").fill("pan-con-tomate-7")
        page.get_by_role("button", name="Save the password and sign in").click()
        page.wait_for_url(f"{asgi_server}/")
        expect(page.locator("h1")).to_have_text("Home")
        expect(page.locator(".tenant-setup")).to_have_count(1)
        expect(page.locator(".tenant-setup")).to_have_attribute("data-tenant", "acme")
        page.goto("/team/acme/")
        expect(page.locator("#content")).not_to_contain_text("Invite a teammate")
        _fits_a_phone(page)
        page.screenshot(path=str(tmp_path / "team_phone_en_agent.png"), full_page=True)
        assert axe_check(page) == []
    finally:
        phone.close()
    assert team_roles(owner.tenant)["ana@acme.test"] == "agent"


def test_the_team_page_on_a_phone_in_english(
    browser: Any, asgi_server: str, owner: Persona, member: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    phone = context_new(browser, base_url=asgi_server, locale="en-US", **PHONE)
    try:
        page = phone.new_page()
        admin_login(page, owner, "/team/acme/")
        expect(page.locator("h1")).to_have_text("Acme team")
        page.get_by_label("Email", exact=True).fill("bob@acme")
        page.get_by_role("button", name="Invite", exact=True).click()
        expect(page.locator("#team-error")).to_have_text(
            "“bob@acme” is not a valid e-mail address."
        )
        _fits_a_phone(page)
        assert axe_check(page) == []

        page.get_by_label("Email", exact=True).fill("bob@acme.test")
        page.get_by_label("Role", exact=True).select_option("admin")
        page.get_by_role("button", name="Invite", exact=True).click()
        expect(page.locator("#invitation")).to_contain_text("bob@acme.test is on the team.")
        expect(page.locator("#invitation")).to_contain_text("We have sent the link by e-mail")
        _fits_a_phone(page)
        page.screenshot(path=str(tmp_path / "team_phone_en_owner.png"), full_page=True)
        assert axe_check(page) == []

        row = page.locator('#members li[data-email="agent@acme.test"]')
        row.get_by_label("Role of agent@acme.test").select_option("admin")
        row.get_by_role("button", name="Change role").click()
        expect(page.locator("p.notice")).to_have_text("agent@acme.test is now administrator.")
        row = page.locator('#members li[data-email="agent@acme.test"]')
        row.locator("summary").click()
        row.get_by_role("button", name="Yes, remove agent@acme.test").click()
        expect(page.locator("p.notice")).to_have_text("agent@acme.test is no longer on the team.")
        assert axe_check(page) == []
    finally:
        phone.close()
    assert team_roles(owner.tenant) == {"owner@acme.test": "owner", "bob@acme.test": "admin"}
