"""The visitor's side of a handoff in the widget (Debian's Chromium, the app under uvicorn):
a person taking over shows a notice in its own style and "typing…" while they write; the
close shows its notice and the rating survey, rated 4 with a comment by keyboard and mouse,
visible in the API detail."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.test import Client

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.conversations import engine
from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.handoff import conversation_claim, conversation_close
from erp.testing.browser import BROWSER_TEST
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeServer
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST


def _asked(page: Any, shop: FakeServer, fake_google: FakeGoogle, binding: ChannelBinding) -> Any:
    from playwright.sync_api import expect

    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": "Claro, dígame.", "confidence": 1})
    )
    page.goto(f"{shop.url}/")
    page.get_by_role("button", name="Abrir el chat").click()
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    box.fill("Quiero cambiar la dirección de mi pedido")
    box.press("Enter")
    expect(page.locator("[data-wc=message][data-role=assistant] [data-wc=text]")).to_have_text(
        "Claro, dígame."
    )
    # The words stream before the reply is stored: a person acting before the turn ends
    # withdraws them (see the mid-stream test). Wait for `done` (the stored reply's id).
    expect(page.locator("[data-wc=message][data-role=assistant]")).to_have_attribute(
        "data-id", re.compile(".")
    )
    return Conversation.objects.for_tenant(binding.tenant).get()


def test_takeover_notice_and_typing_both_ways(
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    shop: FakeServer,
) -> None:
    from playwright.sync_api import expect

    page, binding = visitor_page, webchat_binding
    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 300)
    conversation = _asked(page, shop, fake_google, binding)

    conversation_claim(conversation, owner.user)
    notice = page.locator("[data-wc=event]")
    expect(notice).to_have_text("Una persona del equipo le atiende a partir de ahora.")
    expect(notice).to_have_attribute("data-notice", "claim")
    expect(page.locator("[data-wc=message]")).to_have_count(2)  # not a bot answer

    staff = Client()
    staff.force_login(owner.user)
    typing = page.locator("[data-wc=typing]")
    expect(typing).to_be_hidden()
    assert staff.post(f"/api/v1/conversations/{conversation.pk}/typing").status_code == 200
    expect(typing).to_have_text("Una persona del equipo está escribiendo…")
    expect(typing).to_have_attribute("role", "status")
    expect(typing).to_be_hidden(timeout=15000)  # the ping's TTL ran out

    # The visitor types: the staff read it in the conversation's detail.
    with page.expect_response(lambda r: r.url.endswith("/typing") and r.status == 200):
        page.get_by_role("textbox", name="Escriba su mensaje").press_sequentially("Hola")
    detail = staff.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert detail["customer_typing"] is True


def test_takeover_while_the_bot_streams_drops_its_words_and_keeps_the_visitors_message(
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    shop: FakeServer,
) -> None:
    """A person claims after the answer streamed but before it was stored (the store phase
    held until the claim): the reply is withdrawn, so the visitor's log ends as the stored
    history does (their message, the note, the notice), also after a reload."""
    from playwright.sync_api import expect

    page, binding = visitor_page, webchat_binding
    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 300)
    claimed = threading.Event()
    record = engine.turn_record

    def record_after_the_claim(turn: Any) -> Any:
        claimed.wait(15)
        return record(turn)

    monkeypatch.setattr(engine, "turn_record", record_after_the_claim)
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": "Claro, dígame.", "confidence": 1})
    )
    page.goto(f"{shop.url}/")
    page.get_by_role("button", name="Abrir el chat").click()
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    box.fill("Quiero cambiar la dirección de mi pedido")
    box.press("Enter")
    reply = page.locator("[data-wc=message][data-role=assistant]")
    expect(reply.locator("[data-wc=text]")).to_have_text("Claro, dígame.")
    expect(reply).to_have_attribute("data-streaming", "true")  # not stored yet
    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    conversation_claim(conversation, owner.user)
    claimed.set()

    expect(page.locator("[data-wc=event][data-notice=claim]")).to_be_visible()
    expect(page.locator("[data-wc=note]")).to_have_text(
        "Su mensaje ha llegado a la persona que le atiende."
    )
    messages = page.locator("[data-wc=message]")
    expect(messages).to_have_count(1)  # the streamed words gave way
    stored = Message.objects.for_tenant(binding.tenant).filter(role=Message.Role.USER).get()
    expect(messages).to_have_attribute("data-role", "user")
    expect(messages).to_have_attribute("data-id", str(stored.pk))
    assert (
        not Message.objects.for_tenant(binding.tenant).filter(role=Message.Role.ASSISTANT).exists()
    )

    page.reload()  # the history says the same
    expect(page.locator("[data-wc=event][data-notice=claim]")).to_be_visible()
    expect(messages).to_have_count(1)
    expect(messages).to_have_attribute("data-id", str(stored.pk))


def test_close_shows_the_notice_and_the_rating_the_visitor_rates_4_with_a_comment(
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    shop: FakeServer,
) -> None:
    from playwright.sync_api import expect

    page, binding = visitor_page, webchat_binding
    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 300)
    conversation = _asked(page, shop, fake_google, binding)

    conversation_close(conversation, owner.user)
    expect(page.locator("[data-wc=event][data-notice=close]")).to_have_text(
        "Hemos cerrado esta conversación. ¡Gracias por escribirnos!"
    )
    survey = page.locator("[data-wc=rating]")
    expect(survey).to_be_visible()
    group = page.get_by_role("group", name="¿Cómo valoraría la atención recibida?")
    expect(group).to_be_visible()
    for n in range(1, 6):  # 44 px targets
        box = page.locator(f"[data-wc=rate][data-value='{n}']").bounding_box()
        assert box is not None and box["width"] >= 44 and box["height"] >= 44

    # Sending without a choice says what is missing.
    page.get_by_role("button", name="Enviar valoración").click()
    expect(page.locator("[data-wc=error]")).to_have_text("Elija una puntuación del 1 al 5.")
    # Keyboard: the focus is on the first radio; arrows move the choice to 4.
    expect(page.get_by_role("radio", name="1 de 5")).to_be_focused()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(page.get_by_role("radio", name="4 de 5")).to_be_checked()
    page.get_by_role("textbox", name="Comentario (opcional)").fill("Muy rápida, gracias.")
    page.get_by_role("button", name="Enviar valoración").click()
    expect(page.locator("[data-wc=rating-thanks]")).to_have_text("¡Gracias por su valoración!")
    expect(survey).to_be_hidden()

    staff = Client()
    staff.force_login(owner.user)
    detail = staff.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert (detail["satisfaction_rating"], detail["feedback_text"]) == (4, "Muy rápida, gracias.")

    page.reload()  # rated: the survey does not come back
    expect(page.locator("[data-wc=event][data-notice=close]")).to_be_visible()
    expect(survey).to_be_hidden()
