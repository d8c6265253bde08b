"""The widget in Debian's Chromium (Playwright) on a customer's page of another origin with a
strict CSP, against the app served by uvicorn (ASGI, as in production: SSE streams there, while
the WSGI live server would buffer the async stream). The visitor sees the answer grow token by
token, the history is back after a reload, and a person's reply shows "Le atiende una persona".
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.models import ChannelBinding, Conversation
from ai_agents.services.handoff import conversation_claim, conversation_reply
from erp.testing.browser import BROWSER_TEST, admin_login
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeServer
from erp.testing.fixtures import Persona

ANSWER = "Abrimos de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a 14:00."
SHADOW = "document.querySelector('[data-erp-webchat]').shadowRoot"

pytestmark = BROWSER_TEST


def _open_and_ask(page: Any, *, shop_url: str, question: str) -> tuple[Any, Any, Any]:
    """Open the widget on the customer's page (accessible names, focus) and send `question`.
    Returns (dialog, message log, text box)."""
    from playwright.sync_api import expect

    page.goto(f"{shop_url}/")
    launcher = page.get_by_role("button", name="Abrir el chat")
    expect(launcher).to_have_attribute("aria-expanded", "false")
    launcher.click()
    dialog = page.get_by_role("dialog", name="Lucía")
    expect(dialog).to_be_visible()
    expect(page.locator("[data-wc=greeting]")).to_have_text(
        "¡Hola! Soy Lucía. ¿En qué puedo ayudarle?"
    )
    log = page.locator("[data-wc=log]")
    expect(log).to_have_attribute("aria-live", "polite")
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    expect(box).to_be_focused()
    box.fill(question)
    box.press("Enter")
    return dialog, log, box


def _expect_answer_to_stream(page: Any, log: Any) -> None:
    """Partial text while the model is still writing (polled every animation frame), then the
    whole answer, no longer marked as streaming."""
    from playwright.sync_api import expect

    seen = page.wait_for_function(
        f"""() => {{
            const m = {SHADOW}.querySelector('[data-wc=message][data-role=assistant]');
            const t = m && m.querySelector('[data-wc=text]').textContent;
            return t ? {{text: t, streaming: m.getAttribute('data-streaming')}} : null;
        }}""",
        polling="raf",
    ).json_value()
    assert seen["streaming"] == "true"
    assert 0 < len(seen["text"]) < len(ANSWER)
    assert ANSWER.startswith(seen["text"])
    reply = log.locator("[data-wc=message][data-role=assistant]")
    expect(reply.locator("[data-wc=text]")).to_have_text(ANSWER)
    expect(reply).not_to_have_attribute("data-streaming", "true")
    assert reply.get_attribute("data-id")


def _person_takes_over(page: Any, *, binding: ChannelBinding, owner: Persona) -> None:
    """A person claims the conversation in the staff inbox and replies: the visitor sees it
    while polling."""
    from playwright.sync_api import expect

    owner.user.first_name = "Ana"
    owner.user.save()
    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    conversation = conversation_claim(conversation, owner.user)
    conversation_reply(conversation, owner.user, "Hola, soy Ana. Le atiendo yo.")
    expect(page.locator("[data-wc=state]")).to_have_text("Le atiende una persona")
    human = page.locator("[data-wc=message][data-human=true]")
    expect(human.locator("[data-wc=text]")).to_have_text("Hola, soy Ana. Le atiendo yo.")
    expect(human.locator("[data-wc=author]")).to_have_text("Ana")


def test_answer_streams_token_by_token_and_history_survives_reload(
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    console_errors: list[str],
    shop: FakeServer,
) -> None:
    from playwright.sync_api import expect

    page, binding = visitor_page, webchat_binding
    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 300)
    fake_google.push(
        fake_google.reply_json(
            {"action": "respond", "answer": ANSWER, "confidence": 0.9}, chunks=6, chunk_delay=0.4
        )
    )
    dialog, log, box = _open_and_ask(page, shop_url=shop.url, question="¿Qué horario tienen?")
    _expect_answer_to_stream(page, log)
    expect(log.locator("[data-wc=message][data-role=user] [data-wc=text]")).to_have_text(
        "¿Qué horario tienen?"
    )

    # Reload: the panel reopens with the same history (token in the page's localStorage).
    page.reload()
    messages = page.locator("[data-wc=message]")
    expect(messages).to_have_count(2)
    expect(messages.locator("[data-wc=text]")).to_have_text(["¿Qué horario tienen?", ANSWER])
    assert len(fake_google.generate_requests) == 1

    _person_takes_over(page, binding=binding, owner=owner)

    # The visitor answers; the bot stays silent.
    box.fill("Gracias, Ana")
    page.get_by_role("button", name="Enviar").click()
    expect(page.locator("[data-wc=note]")).to_have_text(
        "Su mensaje ha llegado a la persona que le atiende."
    )
    expect(messages).to_have_count(4)
    assert len(fake_google.generate_requests) == 1

    # Escape closes the dialog and gives the focus back to the launcher.
    box.focus()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("button", name="Abrir el chat")).to_be_focused()
    assert not [e for e in console_errors if "Content Security Policy" in e], console_errors


def test_a_reply_while_the_chat_is_closed_shows_as_a_count_on_the_launcher(
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    shop: FakeServer,
) -> None:
    from playwright.sync_api import expect

    page, binding = visitor_page, webchat_binding
    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 200)  # closed: every 600 ms
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": ANSWER, "confidence": 0.9})
    )
    page.goto(f"{shop.url}/")
    page.get_by_role("button", name="Abrir el chat").click()
    page.get_by_role("textbox", name="Escriba su mensaje").fill("¿Qué horario tienen?")
    page.get_by_role("button", name="Enviar").click()
    expect(page.locator("[data-wc=message][data-role=assistant] [data-wc=text]")).to_have_text(
        ANSWER
    )
    # Stored (`done` gave its id): a claim before that would withdraw the streamed answer.
    expect(page.locator("[data-wc=message][data-role=assistant]")).to_have_attribute(
        "data-id", re.compile(".")
    )
    page.get_by_role("button", name="Cerrar el chat").first.click()
    badge = page.locator("[data-wc=unread]")
    expect(badge).to_be_hidden()  # the bot's answer was read with the panel open

    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    conversation = conversation_claim(conversation, owner.user)
    conversation_reply(conversation, owner.user, "Le escribo yo: ¿para qué tienda?")
    expect(badge).to_have_text("1")
    launcher = page.locator("[data-wc=launcher]")
    expect(launcher).to_have_attribute("aria-label", "Abrir el chat. Mensajes nuevos: 1")
    conversation_reply(conversation, owner.user, "¿Sigue ahí?")
    expect(badge).to_have_text("2")

    page.reload()  # still closed; the replies since the visitor last looked are counted again
    expect(badge).to_have_text("2")
    launcher.click()
    expect(badge).to_be_hidden()
    assert launcher.get_attribute("aria-label") is None
    expect(page.locator("[data-wc=message][data-human=true] [data-wc=text]")).to_have_text(
        ["Le escribo yo: ¿para qué tienda?", "¿Sigue ahí?"]
    )
    page.get_by_role("button", name="Cerrar el chat").first.click()
    page.reload()
    expect(page.locator("[data-wc=launcher]")).to_have_attribute("aria-expanded", "false")
    for _ in range(2):  # two closed polls answered (not a fixed wait a slow machine outlasts)
        with page.expect_response(
            lambda r: "/messages" in r.url and r.request.method == "GET" and r.status == 200
        ):
            pass
    assert badge.is_hidden()  # nothing new
    assert len(fake_google.generate_requests) == 1


def test_demo_page_same_origin_in_english(
    visitor_page: Any,
    asgi_server: str,
    webchat_binding: ChannelBinding,
    owner: Persona,
    fake_google: FakeGoogle,
    console_errors: list[str],
) -> None:
    from playwright.sync_api import expect

    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": "We open at 8.", "confidence": 1})
    )
    page = visitor_page
    admin_login(page, owner, f"/webchat/demo?key={webchat_binding.token}&lang=en", base=asgi_server)

    page.get_by_role("button", name="Open chat").click()
    expect(page.locator("[data-wc=greeting]")).to_have_text(
        "Hello! I am Lucía. How can I help you?"
    )
    page.get_by_role("textbox", name="Type your message").fill("When do you open?")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("[data-wc=message][data-role=assistant] [data-wc=text]")).to_have_text(
        "We open at 8."
    )
    page.get_by_role("button", name="Close chat").first.click()
    expect(page.get_by_role("dialog")).to_be_hidden()
    assert not [e for e in console_errors if "Content Security Policy" in e], console_errors
