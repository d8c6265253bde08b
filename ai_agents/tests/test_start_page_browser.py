"""The start page in Chromium: reached from the admin's "Ver el sitio"; in English on a phone
(390x844: one column, 44 px targets) and in Spanish on a laptop, both passing axe; a member of
two tenants sees one checklist per tenant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ai_agents.tests.handoff_helpers import agent_for
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, PHONE, admin_login, context_new
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

SMALL_TARGETS = """() => [...document.querySelectorAll('#content a, #content button')]
    .filter(e => e.offsetParent !== null)
    .filter(e => e.getBoundingClientRect().height < 44)
    .map(e => e.outerHTML.slice(0, 80))"""


def test_the_start_page_on_a_phone_in_english_and_from_the_admin(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    agent_for(outsider.tenant)
    MembershipFactory.create(tenant=outsider.tenant, user=owner.user)
    phone = context_new(browser, base_url=asgi_server, locale="en-US", **PHONE)
    try:
        page = phone.new_page()
        admin_login(page, owner, "/admin/")
        page.get_by_role("link", name="View site").click()
        page.wait_for_url(f"{asgi_server}/")
        expect(page.locator("h1")).to_have_text("Home")
        acme = page.locator('.tenant-setup[data-tenant="acme"]')
        globex = page.locator('.tenant-setup[data-tenant="globex"]')
        expect(acme.locator("h2")).to_have_text("Acme")
        expect(acme).to_contain_text("Getting started: 0 of 5 steps done.")
        expect(globex).to_contain_text("Getting started: 2 of 5 steps done.")  # agent, teammate
        expect(globex.locator('li[data-step="agent"]')).to_have_attribute("data-done", "true")
        expect(acme.locator('li[data-step="agent"]')).to_have_attribute("data-done", "false")
        expect(acme.locator('li[data-step="channel"]')).to_contain_text("Connect a channel")
        assert "Crear" not in page.locator("#content").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.evaluate(SMALL_TARGETS) == []
        page.screenshot(path=str(tmp_path / "start_phone_en.png"), full_page=True)
        assert axe_check(page) == []

        acme.locator('li[data-step="agent"] a').click()
        page.wait_for_url(f"**/admin/ai_agents/agent/add/?tenant={owner.tenant.pk}")
    finally:
        phone.close()

    laptop = context_new(browser, base_url=asgi_server, viewport={"width": 1366, "height": 768})
    try:
        page = laptop.new_page()
        admin_login(page, owner, "/")
        expect(page.locator("h1")).to_have_text("Inicio")
        expect(page.locator("#start-links")).to_contain_text("Bandeja de conversaciones")
        assert axe_check(page) == []
    finally:
        laptop.close()
