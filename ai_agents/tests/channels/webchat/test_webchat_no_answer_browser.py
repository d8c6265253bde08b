"""The demo agent without a model, in the web chat widget (Debian's Chromium): a question the
demo documents do not cover gets "No tengo esa información" with the offer of a person, a
covered one still gets its passage (framed, its list kept, no file name), and the visitor's
"sí" to the offer hands the conversation to a person. A question sent while the previous reply
is still being stored (its words already on screen) is not lost: it goes once that turn ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache

from ai_agents.conversations import engine
from ai_agents.demo import DEMO_AGENT_NAME
from ai_agents.models import Agent, ChannelBinding, Conversation, Message
from ai_agents.tests.conftest import _shop_html
from erp.demo import demo_load
from erp.testing.browser import BROWSER_TEST, context_new
from erp.testing.fake_http import FakeResponse, FakeServer

pytestmark = BROWSER_TEST

ASSISTANT = "[data-wc=message][data-role=assistant] [data-wc=text]"
# A reply goes through the engine under uvicorn; on a loaded 2-core runner 5 s is not enough.
REPLY_TIMEOUT_MS = 20_000


@pytest.fixture
def demo_page(
    browser: Any, asgi_server: str, shop: FakeServer, settings: Any
) -> Iterator[tuple[Any, Agent]]:
    """The demo agent (no model configured: the offline provider) embedded on the shop."""
    settings.AI_CREDITS_MODE = "off"  # as in the embedded demo run
    cache.clear()  # the per-IP web chat counters other browser tests filled (same 127.0.0.1)
    login = demo_load()
    agent = Agent.objects.for_tenant(login.tenant).get(name=DEMO_AGENT_NAME)
    binding = ChannelBinding.objects.for_tenant(login.tenant).create(
        tenant=login.tenant,
        agent=agent,
        type=ChannelBinding.Type.WEBCHAT,
        allowed_origins=[shop.url],
    )
    shop.route(
        "GET",
        r"^/$",
        FakeResponse(
            headers={"Content-Type": "text/html; charset=utf-8"},
            body=_shop_html(asgi_server, binding.token).encode(),
        ),
    )
    context = context_new(browser)
    yield context.new_page(), agent
    context.close()


def _ask(page: Any, question: str) -> None:
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    box.fill(question)
    box.press("Enter")


def test_off_topic_gets_the_offer_of_a_person_and_a_covered_question_its_passage(
    demo_page: tuple[Any, Agent], shop: FakeServer
) -> None:
    from playwright.sync_api import expect

    page, agent = demo_page
    page.goto(f"{shop.url}/")
    page.get_by_role("button", name="Abrir el chat").click()
    replies = page.locator(ASSISTANT)

    _ask(page, "¿Cuál es la capital de Australia?")
    expect(replies).to_have_count(1, timeout=REPLY_TIMEOUT_MS)
    expect(replies.nth(0)).to_contain_text(
        "No tengo esa información; ¿quiere que le pase con una persona del equipo?"
    )

    _ask(page, "¿Qué formas de pago aceptan?")
    expect(replies).to_have_count(2, timeout=REPLY_TIMEOUT_MS)
    covered = replies.nth(1)
    expect(covered).to_contain_text("Esto es lo que encontré:")
    expect(covered).to_contain_text("Tarjetas de débito y crédito Visa")
    text = covered.inner_text()
    assert "\n- Efectivo" in text  # the passage's list is still a list on screen
    assert ".md" not in text and "pagos_facturacion" not in text

    _ask(page, "¿Venden boletos para el cine?")
    expect(replies).to_have_count(3, timeout=REPLY_TIMEOUT_MS)
    expect(replies.nth(2)).to_contain_text("No tengo esa información")
    _ask(page, "sí, por favor")
    expect(replies).to_have_count(4, timeout=REPLY_TIMEOUT_MS)
    expect(replies.nth(3)).to_have_text(agent.escalation_message)
    conversation = Conversation.objects.for_tenant(agent.tenant_id).get(agent=agent)
    assert (conversation.status, conversation.escalation_reason) == ("escalated", "user_request")


def test_a_question_sent_while_the_reply_before_is_stored_goes_after_it(
    demo_page: tuple[Any, Agent], shop: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reply's words stream before the store phase writes it: the widget is still busy
    with that turn. Enter then keeps the question in the box and sends it when the turn ends
    (it used to be dropped: no request, the box kept the text, no reply ever came)."""
    from playwright.sync_api import expect

    page, agent = demo_page
    asked = threading.Event()
    record = engine.turn_record
    held: list[Any] = []

    def record_after_the_next_question(turn: Any) -> Any:
        if not held:  # only the first turn's store waits
            held.append(turn)
            asked.wait(15)
        return record(turn)

    monkeypatch.setattr(engine, "turn_record", record_after_the_next_question)
    page.goto(f"{shop.url}/")
    page.get_by_role("button", name="Abrir el chat").click()
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    first = page.locator("[data-wc=message][data-role=assistant]").nth(0)

    _ask(page, "¿Cuál es la capital de Australia?")
    expect(first.locator("[data-wc=text]")).to_contain_text(
        "No tengo esa información; ¿quiere que le pase con una persona del equipo?"
    )
    expect(first).to_have_attribute("data-streaming", "true")  # not stored yet
    _ask(page, "¿Qué formas de pago aceptan?")
    expect(box).to_have_value("¿Qué formas de pago aceptan?")  # kept until the turn ends
    asked.set()

    replies = page.locator(ASSISTANT)
    expect(replies).to_have_count(2, timeout=REPLY_TIMEOUT_MS)
    expect(replies.nth(1)).to_contain_text("Tarjetas de débito y crédito Visa")
    expect(box).to_have_value("")
    users = page.locator("[data-wc=message][data-role=user] [data-wc=text]")
    expect(users).to_have_text(
        ["¿Cuál es la capital de Australia?", "¿Qué formas de pago aceptan?"]
    )
    stored = Message.objects.for_tenant(agent.tenant_id).filter(role=Message.Role.USER)
    assert list(stored.order_by("created_at").values_list("content", flat=True)) == [
        "¿Cuál es la capital de Australia?",
        "¿Qué formas de pago aceptan?",
    ]
