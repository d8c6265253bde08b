# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""The staff page in Debian's Chromium (Playwright): log in, ask, see the answer and rounds;
reload, the conversation is gone; nothing was written to web storage."""

from __future__ import annotations

from typing import Any

from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox, hetzner_items  # noqa: F401
from erp.testing.browser import BROWSER_TEST, admin_login
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST


def test_ask_on_the_page_then_reload_forgets(
    live_page: Any, owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    from playwright.sync_api import expect

    page = live_page
    fake_mailbox.items = hetzner_items()
    fake_mailbox.bodies[("msg_123", "inbox")] = "Your server was rebooted for maintenance."
    answer = "El último aviso de Hetzner decía que tu servidor se reinició por mantenimiento."
    fake_google.push(
        fake_google.reply_json({"action": "buscar", "from": "alerts@hetzner.de"}),
        fake_google.reply_json({"action": "leer", "messageId": "msg_123", "folderId": "inbox"}),
        fake_google.reply_json({"action": "responder", "answer": answer}),
    )

    page.goto("/correo/")
    assert "/admin/login/" in page.url  # login required
    admin_login(page, owner, "/correo/")
    expect(page.get_by_text("Buzón sin conectar.")).to_be_visible()
    expect(page.get_by_role("link", name="Conectar Zoho Mail")).to_have_attribute(
        "href", "/correo/zoho/connect"
    )

    storage_js = "[JSON.stringify(localStorage), JSON.stringify(sessionStorage), document.cookie]"
    before = page.evaluate(storage_js)  # (the admin login page keeps its own UI prefs)
    page.get_by_label("Tu pregunta").fill("¿Qué decía el último aviso de Hetzner?")
    page.get_by_role("button", name="Preguntar").click()

    reply = page.locator("#messages li.assistant")
    expect(reply.locator(".text")).to_have_text(answer)
    expect(reply.locator(".meta")).to_contain_text("2 rondas")
    expect(page.locator("#messages")).to_have_attribute("aria-live", "polite")
    assert page.evaluate(storage_js) == before  # nothing stored by the chat

    # the second question carries the history
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "De nada."}))
    page.get_by_label("Tu pregunta").fill("Gracias")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#messages li.assistant")).to_have_count(2)
    last_prompt = "".join(
        p["text"] for c in fake_google.generate_requests[-1]["contents"] for p in c["parts"]
    )
    assert f"Secretaria: {answer}" in last_prompt

    page.reload()
    expect(page.locator("#messages li")).to_have_count(0)


def test_rate_limit_and_disconnected_mailbox_messages(
    live_page: Any, owner: Persona, fake_google: FakeGoogle, settings: Any
):
    from playwright.sync_api import expect

    page = live_page
    admin_login(page, owner, "/correo/")

    page.get_by_label("Tu pregunta").fill("¿Hola?")
    page.get_by_role("button", name="Preguntar").click()  # no mailbox connected: 503
    expect(page.locator("#error")).to_contain_text("Tu buzón no está conectado.")
    expect(page.locator("#error a")).to_have_attribute("href", "/correo/zoho/connect")

    page.route(
        "**/api/correo/ask",
        lambda route: route.fulfill(
            status=429,
            headers={"Retry-After": "37", "Content-Type": "application/json"},
            body='{"error": {"code": "rate_limited", "message": "x"}}',
        ),
    )
    page.get_by_role("button", name="Preguntar").click()
    expect(page.locator("#error")).to_contain_text("37 s")

    deadline = "La consulta superó el tiempo máximo (90 s) sin respuesta."
    for status, body, shown in (
        (504, f'{{"error": {{"code": "deadline_exceeded", "message": "{deadline}"}}}}', deadline),
        (504, "<html>Gateway Timeout</html>", "tardaron demasiado"),  # a proxy's own 504
    ):
        page.unroute("**/api/correo/ask")
        page.route("**/api/correo/ask", _answer_with(status, body))
        page.get_by_role("button", name="Preguntar").click()
        expect(page.locator("#error")).to_contain_text(shown)


def _answer_with(status: int, body: str) -> Any:
    def handler(route: Any, request: Any) -> None:
        route.fulfill(status=status, body=body)

    return handler
