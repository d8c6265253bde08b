"""The answer's `options` as chips in the widget (Debian's Chromium, the app under uvicorn, the
customer's page with a strict CSP): the chips show numbered under the bot's answer, a click sends
the chip's title as the visitor's message with the option's id, the chips go away and the next
answer appears. After a reload the history shows them again under the latest answer."""

from __future__ import annotations

from typing import Any

from ai_agents.models import ChannelBinding, Message
from erp.tenancy.scoping import tenant_scope
from erp.testing.browser import BROWSER_TEST
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeServer

pytestmark = BROWSER_TEST

QUESTION = "Quiero hacer un pedido"
ASKED = "¿Lo recoge en tienda o se lo enviamos?"
OPTIONS = [
    {"id": "pickup", "title": "Recoger en tienda"},
    {"id": "delivery", "title": "Envío a domicilio", "description": "24-48 h"},
]
NEXT = "Perfecto: se lo enviamos mañana."
# Numbered as a typed "2" picks them (rules/options.option_pick); a click sends the title only.
NUMBERED = ["1. Recoger en tienda", "2. Envío a domicilio"]


def test_chips_show_under_the_answer_and_a_click_brings_the_next_answer(
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    fake_google: FakeGoogle,
    console_errors: list[str],
    shop: FakeServer,
) -> None:
    from playwright.sync_api import expect

    page = visitor_page
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": ASKED, "options": OPTIONS}),
        fake_google.reply_json({"action": "respond", "answer": NEXT}),
    )
    page.goto(f"{shop.url}/")
    page.get_by_role("button", name="Abrir el chat").click()
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    box.fill(QUESTION)
    box.press("Enter")

    replies = page.locator("[data-wc=message][data-role=assistant] [data-wc=text]")
    expect(replies).to_have_text([ASKED])
    chips = page.get_by_role("group", name="Opciones").get_by_role("button")
    expect(chips).to_have_text(NUMBERED)
    expect(chips.nth(1)).to_have_attribute("title", "24-48 h")

    page.reload()  # the history brings the chips back under the latest answer
    expect(replies).to_have_text([ASKED])
    expect(chips).to_have_text(NUMBERED)

    page.get_by_role("button", name="2. Envío a domicilio").click()
    expect(replies).to_have_text([ASKED, NEXT])
    expect(page.locator("[data-wc=options]")).to_have_count(0)  # the choice is made
    visitor = page.locator("[data-wc=message][data-role=user] [data-wc=text]")
    expect(visitor).to_have_text([QUESTION, "Envío a domicilio"])

    with tenant_scope(webchat_binding.tenant):
        chosen = Message.objects.filter(role="user").order_by("created_at").last()
    assert chosen is not None and chosen.content == "Envío a domicilio"
    assert chosen.metadata["channel_metadata"]["option_id"] == "delivery"
    assert "Envío a domicilio" in str(fake_google.generate_requests[-1]["contents"][-1])
    assert not [e for e in console_errors if "Content Security Policy" in e], console_errors
