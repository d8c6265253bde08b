"""Issue 6 acceptance, end to end in Debian's Chromium: two people, two browser contexts, one
app under uvicorn. A visitor on a customer's site (another origin) talks to the bot through
the widget and asks for a person; a staff member sees the conversation appear in `/inbox/`,
claims it and replies; the visitor sees the person's reply, and while the person holds the
conversation the visitor's messages reach the inbox live and the model is never called. Once
the staff member hands it back, the bot answers again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from ai_agents.channels.webchat import visitor as webchat
from ai_agents.inbox import list_views as inbox_list_views
from ai_agents.inbox import views as inbox_views
from ai_agents.models import ChannelBinding, Conversation, Message
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeServer
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

FIRST_ANSWER = "Abrimos de lunes a viernes de 8:00 a 20:00."
HUMAN_REPLY = "Hola, soy Ana. Ya tengo su pedido delante; le cuento enseguida."
LATE_ANSWER = "Su pedido 1234 sale mañana por mensajería."


def _respond(fake_google: FakeGoogle, answer: str) -> None:
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": answer, "confidence": 0.9})
    )


def _visitor_says(page: Any, text: str) -> None:
    box = page.get_by_role("textbox", name="Escriba su mensaje")
    box.fill(text)
    box.press("Enter")


@dataclass
class _Scene:
    """The two people's pages and what the test watches on the visitor's."""

    visitor: Any
    staff: Any
    fake_google: FakeGoogle
    binding: ChannelBinding

    @property
    def log(self) -> Any:
        return self.visitor.locator("[data-wc=log]")

    @property
    def bot_says(self) -> Any:
        return self.log.locator("[data-wc=message][data-role=assistant][data-human=false]")

    @property
    def state(self) -> Any:
        return self.visitor.locator("[data-wc=state]")


def test_staff_takes_over_from_the_bot_and_hands_back(
    browser: Any,
    asgi_server: str,
    visitor_page: Any,
    webchat_binding: ChannelBinding,
    shop: FakeServer,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    console_errors: list[str],
) -> None:
    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 300)
    monkeypatch.setattr(inbox_views, "POLL_SECONDS", 1)  # the conversation every 1 s
    monkeypatch.setattr(inbox_list_views, "REFRESH_SECONDS", 1)  # the list every 1 s
    owner.user.first_name = "Ana"
    owner.user.save()

    # The staff member is already in the inbox (own context: own session cookie); it is empty.
    staff_context = context_new(browser, base_url=asgi_server)
    scene = _Scene(visitor_page, staff_context.new_page(), fake_google, webchat_binding)
    try:
        admin_login(scene.staff, owner, "/inbox/")
        expect(scene.staff.locator("#inbox-cards .inbox-card[data-conversation-id]")).to_have_count(
            0
        )
        _the_bot_answers_first(scene, shop_url=shop.url)
        conversation = _the_visitor_asks_for_a_person(scene)
        _staff_claims_and_replies(scene, conversation)
        _the_visitor_sees_the_person(scene)
        _the_visitor_writes_to_the_person(scene)
        _staff_hands_back_to_the_bot(scene)
    finally:
        staff_context.close()

    _assert_stored(scene, conversation, author=owner)
    assert not [e for e in console_errors if "Content Security Policy" in e], console_errors


def _the_bot_answers_first(scene: _Scene, *, shop_url: str) -> None:
    """(1) The visitor asks; the bot answers."""
    _respond(scene.fake_google, FIRST_ANSWER)
    scene.visitor.goto(f"{shop_url}/")
    scene.visitor.get_by_role("button", name="Abrir el chat").click()
    _visitor_says(scene.visitor, "¿Qué horario tienen?")
    expect(scene.bot_says.locator("[data-wc=text]")).to_have_text([FIRST_ANSWER])
    assert len(scene.fake_google.generate_requests) == 1


def _the_visitor_asks_for_a_person(scene: _Scene) -> Conversation:
    """(2) The bot hands over (no model call) and says so; the conversation shows up in the
    staff member's inbox list without a reload."""
    _visitor_says(scene.visitor, "Quiero hablar con una persona")
    expect(scene.bot_says).to_have_count(2)
    expect(scene.bot_says.last.locator("[data-wc=text]")).to_have_text(
        scene.binding.agent.escalation_message
    )
    expect(scene.state).to_have_attribute("data-state", "waiting")
    assert len(scene.fake_google.generate_requests) == 1
    conversation = Conversation.objects.for_tenant(scene.binding.tenant).get()
    assert conversation.status == Conversation.Status.ESCALATED
    assert conversation.assigned_to_id is None

    row = scene.staff.locator(f'#inbox-cards .inbox-card[data-conversation-id="{conversation.pk}"]')
    expect(row).to_have_attribute("data-claimed", "false")
    expect(row).to_contain_text("Chat web")
    return conversation


def _staff_claims_and_replies(scene: _Scene, conversation: Conversation) -> None:
    """(3) Staff opens the conversation from the list, claims it and replies."""
    staff = scene.staff
    row = staff.locator(f'#inbox-cards .inbox-card[data-conversation-id="{conversation.pk}"]')
    row.locator(".card-open").click()
    staff.wait_for_url(f"**/inbox/{conversation.pk}")
    expect(staff.locator('#inbox-messages li[data-kind="customer"]')).to_have_count(2)
    expect(staff.locator("#inbox-reply-text")).to_be_disabled()
    staff.locator("#inbox-claim").click()
    expect(staff.locator("#inbox-holder")).to_have_attribute("data-claimed", "true")
    staff.locator("#inbox-reply-text").fill(HUMAN_REPLY)
    staff.locator("#inbox-send").click()
    expect(staff.locator('#inbox-messages li[data-kind="person"]')).to_contain_text(HUMAN_REPLY)


def _the_visitor_sees_the_person(scene: _Scene) -> None:
    """(4) The widget shows the person's reply and that a person is attending."""
    human = scene.log.locator("[data-wc=message][data-human=true]")
    expect(human.locator("[data-wc=text]")).to_have_text([HUMAN_REPLY])
    expect(human.locator("[data-wc=author]")).to_have_text(["Ana"])
    expect(scene.state).to_have_attribute("data-state", "human")
    expect(scene.state).to_have_text("Le atiende una persona")


def _the_visitor_writes_to_the_person(scene: _Scene) -> None:
    """(5) The visitor writes again: it reaches the inbox live; the bot stays silent."""
    _visitor_says(scene.visitor, "Es el pedido 1234, gracias")
    expect(scene.visitor.locator("[data-wc=note]")).to_have_text(
        "Su mensaje ha llegado a la persona que le atiende."
    )
    expect(scene.staff.locator('#inbox-messages li[data-kind="customer"]').last).to_contain_text(
        "Es el pedido 1234, gracias"
    )
    assert len(scene.fake_google.generate_requests) == 1
    expect(scene.bot_says).to_have_count(2)


def _staff_hands_back_to_the_bot(scene: _Scene) -> None:
    """(6) Staff releases the conversation; the visitor's next message gets a bot answer."""
    scene.staff.locator("#inbox-release").click()
    expect(scene.staff.locator("#inbox-status")).to_have_text("Activa")
    expect(scene.state).to_have_attribute("data-state", "bot")
    expect(scene.state).to_be_hidden()
    _respond(scene.fake_google, LATE_ANSWER)
    _visitor_says(scene.visitor, "¿Cuándo sale mi pedido?")
    expect(scene.bot_says).to_have_count(3)
    expect(scene.bot_says.last.locator("[data-wc=text]")).to_have_text(LATE_ANSWER)
    assert len(scene.fake_google.generate_requests) == 2
    expect(scene.staff.locator('#inbox-messages li[data-kind="bot"]').last).to_contain_text(
        LATE_ANSWER
    )


def _assert_stored(scene: _Scene, conversation: Conversation, *, author: Persona) -> None:
    """Every message once, in order, with who wrote it; the bot's last call saw the person."""
    stored = list(
        Message.objects.for_tenant(scene.binding.tenant)
        .filter(conversation=conversation)
        .order_by("created_at", "pk")
        .values_list("role", "author_id", "content")
    )
    assert stored == [
        ("user", None, "¿Qué horario tienen?"),
        ("assistant", None, FIRST_ANSWER),
        ("user", None, "Quiero hablar con una persona"),
        ("assistant", None, scene.binding.agent.escalation_message),
        ("system", None, "Una persona del equipo le atiende a partir de ahora."),  # notice
        ("assistant", author.user.pk, HUMAN_REPLY),
        ("user", None, "Es el pedido 1234, gracias"),
        (
            "system",
            None,
            "La persona del equipo le devuelve al asistente, que sigue a su servicio.",
        ),
        ("user", None, "¿Cuándo sale mi pedido?"),
        ("assistant", None, LATE_ANSWER),
    ]
    conversation.refresh_from_db()
    assert conversation.status == Conversation.Status.ACTIVE
    assert conversation.assigned_to_id is None
    last_prompt = "".join(
        p.get("text", "")
        for c in scene.fake_google.generate_requests[-1]["contents"]
        for p in c["parts"]
    )
    assert HUMAN_REPLY in last_prompt
