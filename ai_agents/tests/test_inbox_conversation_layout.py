"""The inbox on a phone (390x844) and a laptop (1366x768), Spanish and English, as the owner
and as the agent the owner assigned the conversation to, in Debian's Chromium under uvicorn:

- the list: a one-row header, search, the "Filtros" toggle (closed) and the first card fit the
  first screen;
- a long conversation: back, Reclamar, Cerrar, "Más", the composer and its send button are on
  the first screen with at least five messages of the timeline; every target is >= 44 px, the
  inputs 16 px; on a phone Asignar and Detalles are behind "Más" and the facts behind
  "Detalles"; the locked reply box says why (claim it, or a colleague holds it) on a phone too;
- axe-core finds no serious or critical issue in the new states: the assign picker open, the
  note mode, the canned replies list open, the conversation held by a colleague / by oneself.

Screenshots go to the test's tmp dir (`--basetemp` to keep them).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from ai_agents.models import Conversation, Message
from ai_agents.services import inbox as inbox_service
from ai_agents.services.canned_replies import canned_reply_create
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.scoping import tenant_scope
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}
WORDS = {
    "es": {
        "assign": "Asignar",
        "note": "Nota interna",
        "save_note": "Guardar nota",
        "claim_first": "Reclame la conversación para responder.",
        # who holds it and the owner's way out, not "only notes" with "Responder" selected
        "locked": "La atiende agent@acme.test: deje una nota interna o tome el control.",
    },
    "en": {
        "assign": "Assign",
        "note": "Internal note",
        "save_note": "Save note",
        "claim_first": "Claim the conversation to reply.",
        "locked": "agent@acme.test is handling it: leave an internal note or take over.",
    },
}

# A disabled reply box is as tall as its placeholder: a copy in a box that grows with its
# text (no placeholder) must not be taller.
BOX_FITS_REASON = """e => {
  const copy = e.cloneNode();
  copy.removeAttribute("id");
  copy.disabled = false;
  copy.placeholder = "";
  copy.value = e.placeholder;
  copy.style.fieldSizing = "content";
  e.parentElement.appendChild(copy);
  const need = copy.getBoundingClientRect().height;
  copy.remove();
  return e.getBoundingClientRect().height >= need - 1;
}"""

FACTS_JS = """() => {
  const inView = e => {
    const r = e.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.left >= 0
      && r.bottom <= innerHeight && r.right <= innerWidth;
  };
  const shownIn = list => {
    const box = list.getBoundingClientRect();
    const top = Math.max(box.top, 0) - 1, bottom = Math.min(box.bottom, innerHeight) + 1;
    return [...list.children].filter(li => {
      const r = li.getBoundingClientRect();
      return r.top >= top && r.bottom <= bottom;
    }).length;
  };
  const list = document.querySelector('#inbox-messages');
  const targets = [...document.querySelectorAll('main button, a.back, header button, '
      + 'header select, main select, summary, .composer-mode label, .card-open')]
    .filter(e => e.offsetParent !== null);
  const small = targets.filter(e => {
    const r = e.getBoundingClientRect();
    return r.height < 44 || r.width < 44;
  }).map(e => e.id || e.textContent.trim());
  const fonts = [...document.querySelectorAll('main input:not([type=checkbox]):not([type=radio]),'
      + ' main select, main textarea')]
    .filter(e => e.offsetParent !== null).map(e => parseFloat(getComputedStyle(e).fontSize));
  const visible = {};
  ['inbox-back', 'inbox-claim', 'inbox-close', 'inbox-actions-toggle', 'inbox-reply-text',
   'inbox-send', 'inbox-mode-note', 'inbox-q', 'inbox-filter-panel'].forEach(id => {
    let e = document.getElementById(id);
    if (!e) return;
    if (e.type === 'radio') e = e.closest('label');
    if (e.tagName === 'DETAILS') e = e.querySelector('summary');
    visible[id] = inView(e);
  });
  const card = document.querySelector('.inbox-card .card-open');
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > innerWidth + 1)
    .slice(0, 6).map(e => e.tagName + '#' + e.id + '.' + e.className);
  return {
    overflow: document.documentElement.scrollWidth - innerWidth, wide, small, visible,
    shown: list ? shownIn(list) : 0, min_font: Math.min(16, ...fonts),
    first_card: card ? inView(card) : null,
  };
}"""


def _long_conversation(owner: Persona) -> Conversation:
    conversation = conversation_make(agent_for(owner.tenant), thread="lucia")
    with tenant_scope(owner.tenant):
        for n in range(30):
            Message.objects.create(
                tenant=owner.tenant,
                conversation=conversation,
                agent=conversation.agent,
                role="user" if n % 3 else "assistant",
                content=f"Mensaje {n}: ¿me confirma la fecha de entrega?",
                created_at=timezone.now() - timedelta(minutes=30 - n),
            )
    inbox_service.conversation_note_add(
        conversation=conversation, author=owner.user, text="Cliente habitual: trato preferente."
    )
    canned_reply_create(
        tenant_id=owner.tenant.pk,
        shortcut="saludo",
        title="Saludo",
        text="Hola {{contact.name}}, soy {{agent.name}}.",
    )
    return conversation


def _open(browser: Any, base: str, persona: Persona, *, language: str, size: dict[str, int]) -> Any:
    context = context_new(browser, base_url=base, viewport=size)
    context.add_cookies([{"name": "django_language", "value": language, "url": base}])
    page = context.new_page()
    admin_login(page, persona, "/inbox/")
    assert page.locator("html").get_attribute("lang") == language
    return page


def _check(page: Any, shot: Path, label: str) -> dict[str, Any]:
    page.screenshot(path=shot)
    assert axe_check(page) == [], label
    facts: dict[str, Any] = page.evaluate(FACTS_JS)
    assert facts["overflow"] <= 0, (label, facts)
    assert facts["min_font"] >= 16, (label, facts)
    return facts


def _phone_list(page: Any, shots: Path, language: str) -> None:
    facts = _check(page, shots / f"{language}-phone-owner-list.png", "phone list")
    assert facts["small"] == [], facts
    assert facts["visible"]["inbox-q"] and facts["visible"]["inbox-filter-panel"], facts
    assert facts["first_card"], facts
    assert page.locator("#inbox-filter-panel").get_attribute("open") is None
    # the header is one row in both languages: the admin link beside the language switcher
    nav, switcher = (page.locator(f"header {e}").bounding_box() for e in ("nav", "form"))
    assert nav is not None and switcher is not None
    assert switcher["y"] < nav["y"] + nav["height"], (nav, switcher)  # not wrapped below it


def _phone_conversation(page: Any, shots: Path, language: str) -> None:
    # the locked reply box says why in the box itself (a phone shows no hint line)
    box = page.locator("#inbox-reply-text")
    expect(box).to_have_attribute("placeholder", WORDS[language]["claim_first"])
    expect(page.locator("#inbox-reply-hint")).to_be_hidden()
    facts = _check(page, shots / f"{language}-phone-owner-conversation.png", "phone page")
    assert facts["small"] == [], facts
    assert facts["shown"] >= 5, facts
    assert all(facts["visible"][k] for k in ("inbox-back", "inbox-claim", "inbox-send")), facts
    assert facts["visible"]["inbox-actions-toggle"], facts  # Asignar and Detalles behind it
    assert all(
        facts["visible"][k] for k in ("inbox-close", "inbox-reply-text", "inbox-mode-note")
    ), facts
    # The facts wait behind "Detalles" (in "Más").
    expect(page.locator("#inbox-facts")).to_be_hidden()
    _secondary(page, "#inbox-more-toggle").click()
    expect(page.locator("#inbox-facts")).to_be_visible()
    _secondary(page, "#inbox-more-toggle").click()
    expect(page.locator("#inbox-facts")).to_be_hidden()


def _secondary(page: Any, selector: str) -> Any:
    """A secondary action: on a phone, behind "Más" (opened first)."""
    toggle = page.locator("#inbox-actions-toggle")
    if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    return page.locator(selector)


def _new_states(page: Any, shots: Path, name: str, language: str) -> None:
    """The assign picker, the note mode and the canned replies list: each passes axe."""
    words = WORDS[language]
    _secondary(page, "#inbox-assign-toggle").click()
    expect(page.locator("#inbox-assign-toggle")).to_have_text(words["assign"])
    expect(page.locator("#inbox-assign")).to_be_visible()
    _check(page, shots / f"{name}-assign.png", f"{name} assign")
    page.keyboard.press("Escape")
    expect(page.locator("#inbox-assign")).to_be_hidden()

    page.get_by_label(words["note"], exact=True).check()
    expect(page.locator("#inbox-send")).to_have_text(words["save_note"])
    page.locator("#inbox-reply-text").fill("Pedido 1234 revisado.")
    _check(page, shots / f"{name}-note-mode.png", f"{name} note mode")
    page.locator("#inbox-reply-text").fill("")
    page.locator("#inbox-reply-text").press_sequentially("/")
    expect(page.locator("#inbox-canned [role=option]")).to_have_count(1)
    _check(page, shots / f"{name}-canned.png", f"{name} canned list")
    page.locator("#inbox-reply-text").press("Escape")
    expect(page.locator("#inbox-canned")).to_be_hidden()


@pytest.mark.parametrize("language", ["es", "en"])
def test_phone_and_laptop_layouts_of_the_new_states_pass_axe(
    browser: Any,
    asgi_server: str,
    owner: Persona,
    member: Persona,
    tmp_path: Path,
    language: str,
) -> None:
    conversation = _long_conversation(owner)
    path = f"/inbox/{conversation.pk}"
    for size_name, size in (("phone", PHONE), ("laptop", LAPTOP)):
        page = _open(browser, asgi_server, owner, language=language, size=size)
        try:
            if size_name == "phone":
                _phone_list(page, tmp_path, language)
            else:
                _check(page, tmp_path / f"{language}-laptop-owner-list.png", "laptop list")
            page.goto(path)
            if size_name == "phone":
                _phone_conversation(page, tmp_path, language)
            _new_states(page, tmp_path, f"{language}-{size_name}-owner", language)
        finally:
            page.context.close()

    with tenant_scope(owner.tenant):
        inbox_service.conversation_assign(
            conversation=Conversation.objects.get(pk=conversation.pk),
            assignee=member.user,
            by=owner.user,
        )
    for size_name, size in (("phone", PHONE), ("laptop", LAPTOP)):
        for persona, who in ((member, "agent"), (owner, "owner")):
            page = _open(browser, asgi_server, persona, language=language, size=size)
            try:
                page.goto(path)
                expect(page.locator("#inbox-send")).to_be_enabled(enabled=who == "agent")
                why = {"agent": "", "owner": WORDS[language]["locked"]}[who]
                # a colleague holds it: "claim it" would be no answer
                expect(page.locator("#inbox-reply-text")).to_have_attribute("placeholder", why)
                if size_name == "laptop" and why:
                    expect(page.locator("#inbox-reply-why")).to_have_text(why)
                elif size_name == "laptop":
                    expect(page.locator("#inbox-reply-why")).to_be_hidden()
                facts = _check(page, tmp_path / f"{language}-{size_name}-{who}-held.png", who)
                if size_name == "phone":
                    # the locked box shows its whole reason (three lines): one bubble less
                    assert facts["small"] == [] and facts["shown"] >= (4 if why else 5), facts
                    assert facts["visible"]["inbox-reply-text"], facts
                if size_name == "phone" and why:  # the whole reason in the box, not cut
                    assert page.locator("#inbox-reply-text").evaluate(BOX_FITS_REASON), why
            finally:
                page.context.close()
