"""The secret badges as people see them, in Debian's Chromium: an agent (view only) and an
owner open the WhatsApp channel, the handoff settings and the HTTP tool, on a laptop and a
phone, in Spanish and English. The badge is visible and readable; no secret value is on the
page. Screenshots go to var/screenshots/ (for a human look)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ai_agents.models import ChannelBinding, HandoffSettings, HttpTool
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fixtures import Persona
from tests.admin_probe import url
from tests.admin_rows import rows_for, secrets_of

pytestmark = BROWSER_TEST

SHOTS = Path(__file__).resolve().parent.parent / "var" / "screenshots"
SIZES = {"laptop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
BADGE = {"es": "configurado", "en": "set"}


@pytest.mark.parametrize("language", ["es", "en"])
@pytest.mark.parametrize("role", ["owner", "member"])
def test_secret_badges_read_well_and_hide_the_values(
    browser: Any, live_server: Any, role: str, language: str, request: Any
) -> None:
    from playwright.sync_api import expect

    persona: Persona = request.getfixturevalue(role)
    rows = rows_for(persona.tenant, persona.user)
    secrets = list(secrets_of(persona.tenant).values())
    SHOTS.mkdir(parents=True, exist_ok=True)
    for size, viewport in SIZES.items():
        context = context_new(
            browser,
            base_url=live_server.url,
            viewport=viewport,
            locale="es-ES" if language == "es" else "en-US",
            extra_http_headers={"Accept-Language": language},
        )
        page = context.new_page()
        try:
            admin_login(page, persona, "/admin/")
            for model in (ChannelBinding, HandoffSettings, HttpTool):
                page.goto(url(model, "change", rows[model].pk))
                badge = page.locator(".secret-badge").first
                expect(badge).to_be_visible()
                expect(badge).to_have_text(BADGE[language])
                badge.scroll_into_view_if_needed()
                html = page.content()
                assert [s for s in secrets if s in html] == [], page.url
                writable = page.locator("input[name=_save]").count() == 1
                assert writable is (role == "owner")
                name = f"{model._meta.model_name}-{role}-{size}-{language}.png"
                page.screenshot(path=str(SHOTS / name), full_page=True)
        finally:
            context.close()
