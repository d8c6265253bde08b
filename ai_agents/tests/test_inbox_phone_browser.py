"""The staff inbox on a phone (390x844) and a laptop (1366x768), in Debian's Chromium:

- the list's tabs and the conversation's actions fit the screen without sideways scrolling, in
  Spanish and English, as owner and as support agent: the primary action (Reclamar or Tomar el
  control) and Cerrar in view at once, the secondary actions behind "Más" (inside the screen
  too when open);
- the tab title's "(N)" is the "Esperando respuesta" tab's badge (held conversations whose
  customer nobody answered count) and falls when a person replies.

Screenshots go to the test's tmp dir (`<lang>-<persona>-<size>-<page>.png`; `*more.png`: the
phone's "Más" open).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from ai_agents.models import Conversation
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

SIZES = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1366, "height": 768}}
WORDS = {  # the primary action on the unheld / the colleague's conversation, Cerrar, Más
    "es": ("Reclamar", "Tomar el control", "Cerrar", "Más"),
    "en": ("Claim", "Take over", "Close", "More"),
}
OUT_OF_VIEW = """(selector) => {
  const right = window.innerWidth;
  const out = [...document.querySelectorAll(selector)]
    .filter(e => e.getClientRects().length > 0)
    .map(e => [e.textContent.trim(), e.getBoundingClientRect()])
    .filter(([, r]) => r.left < 0 || r.right > right)
    .map(([text, r]) => `${text}: ${Math.round(r.left)}..${Math.round(r.right)}`);
  return {out, page: document.scrollingElement.scrollWidth - right};
}"""


# The visible actions in tab (document) order and in reading order (row, then left to right).
ORDERS = """() => {
  const shown = [...document.querySelectorAll(".conv-head .actions button")]
    .filter(e => e.getClientRects().length > 0)
    .map(e => [e.id, e.getBoundingClientRect()]);
  const reading = [...shown].sort(([, a], [, b]) =>
    Math.abs(a.top - b.top) > a.height / 2 ? a.top - b.top : a.left - b.left);
  return {tab: shown.map(([id]) => id), reading: reading.map(([id]) => id)};
}"""


def _fits(page: Any, selector: str, where: str) -> None:
    facts = page.evaluate(OUT_OF_VIEW, selector)
    assert facts["out"] == [], f"{where}: {facts}"
    assert facts["page"] <= 0, f"{where}: {facts}"


def _open_details(page: Any) -> None:
    """The Detalles panel, from "Más" on a phone."""
    toggle = page.locator("#inbox-actions-toggle")
    if toggle.is_visible():
        toggle.click()
    page.locator("#inbox-more-toggle").click()
    expect(page.locator("#inbox-more")).to_be_visible()


def _actions_fit(page: Any, primary: str, language: str, where: str, *, shot: Path) -> None:
    actions = page.locator(".conv-head .actions")
    if primary:
        expect(actions.get_by_role("button", name=primary, exact=True)).to_be_in_viewport(ratio=1)
    close = actions.get_by_role("button", name=WORDS[language][2], exact=True)
    expect(close).to_be_in_viewport(ratio=1)
    _fits(page, ".conv-head .actions button", where)
    orders = page.evaluate(ORDERS)
    assert orders["tab"] == orders["reading"], f"{where}: Tab order is not reading order"
    if close.is_enabled():  # Esc closes the dialog over a panel, not the panel too
        _open_details(page)
        close.click()
        expect(page.locator("#inbox-close-dialog")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.locator("#inbox-close-dialog")).to_be_hidden()
        expect(page.locator("#inbox-more")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.locator("#inbox-more")).to_be_hidden()
    toggle = page.locator("#inbox-actions-toggle")
    if toggle.is_visible():
        expect(toggle).to_have_text(WORDS[language][3] + " ▾")
        toggle.click()
        expect(page.locator("#inbox-release")).to_be_in_viewport(ratio=1)
        _fits(page, ".conv-head .actions button", f"{where}, Más open")
        page.screenshot(path=shot)
        page.keyboard.press("Escape")
        expect(page.locator("#inbox-release")).to_be_hidden()
        expect(toggle).to_be_focused()
        # A panel opened from "Más" gives the focus back to "Más" when Esc closes it.
        toggle.click()
        page.locator("#inbox-more-toggle").click()
        details = page.locator("#inbox-more")
        expect(details).to_be_visible()
        # "Más" opened again over the panel: one Esc closes the menu, the next the panel.
        toggle.click()
        expect(page.locator("#inbox-release")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.locator("#inbox-release")).to_be_hidden()
        expect(details).to_be_visible()
        page.keyboard.press("Escape")
        expect(details).to_be_hidden()
        expect(toggle).to_be_focused()


def _check_pages(
    page: Any, persona: Persona, conversations: tuple[Any, Any], *, language: str, shot: Any
) -> None:
    admin_login(page, persona, "/inbox/")
    assert page.locator("html").get_attribute("lang") == language
    expect(page.locator(".inbox-tabs li")).to_have_count(5)
    page.screenshot(path=shot("list"))
    _fits(page, ".inbox-tabs li", "tabs")
    free, colleagues = conversations
    page.goto(f"/inbox/{free.pk}")
    _actions_fit(page, WORDS[language][0], language, "unheld conversation", shot=shot("more"))
    page.screenshot(path=shot("conversation"))
    page.goto(f"/inbox/{colleagues.pk}")
    # an agent cannot take an owner's conversation over: then no primary action
    primary = WORDS[language][1] if page.locator("#inbox-takeover").is_visible() else ""
    _actions_fit(page, primary, language, "a colleague's conversation", shot=shot("held-more"))
    page.screenshot(path=shot("held"))


@pytest.mark.parametrize("who", ["owner", "member"])
@pytest.mark.parametrize("language", ["es", "en"])
def test_tabs_and_actions_fit_the_screen_without_sideways_scrolling(
    browser: Any,
    asgi_server: str,
    owner: Persona,
    member: Persona,
    tmp_path: Path,
    language: str,
    who: str,
) -> None:
    me, colleague = (owner, member) if who == "owner" else (member, owner)
    agent = agent_for(owner.tenant)
    free = conversation_make(agent, thread="lucia")
    colleagues = conversation_make(agent, thread="pedro")
    handoff.conversation_claim(colleagues, colleague.user)
    for size_name, size in SIZES.items():
        context = context_new(browser, base_url=asgi_server, viewport=size)
        context.add_cookies([{"name": "django_language", "value": language, "url": asgi_server}])
        page = context.new_page()
        prefix = f"{language}-{who}-{size_name}"
        try:
            _check_pages(
                page,
                me,
                (free, colleagues),
                language=language,
                shot=lambda name, prefix=prefix: tmp_path / f"{prefix}-{name}.png",
            )
        finally:
            context.close()


def _title_and_badge(page: Any, count: int) -> None:
    expect(page.locator('.inbox-tabs [data-count="waiting"]')).to_have_text(str(count))
    title = f"({count}) Bandeja de conversaciones" if count else "Bandeja de conversaciones"
    expect(page).to_have_title(title)


def test_the_title_counts_the_waiting_tab_and_falls_when_a_person_replies(
    browser: Any, asgi_server: str, owner: Persona, member: Persona
) -> None:
    agent = agent_for(owner.tenant)
    conversation_make(agent, thread="ana")
    held = conversation_make(agent, thread="eva")
    handoff.conversation_claim(held, member.user)
    conversation_make(agent, thread="bot", status=Conversation.Status.ACTIVE)
    context = context_new(browser, base_url=asgi_server)
    page = context.new_page()
    try:
        admin_login(page, owner, "/inbox/")
        expect(page.locator("html")).to_have_attribute("data-inbox-live", "live")
        _title_and_badge(page, 2)  # the held one waits too: a claim answers nobody
        handoff.conversation_reply(held, member.user, "Hola Eva, ya estoy con usted.")
        _title_and_badge(page, 1)
    finally:
        context.close()
