"""The widget in Debian's Chromium (Playwright) on a customer's page of another origin with a
strict CSP, against the app served by uvicorn (ASGI, as in production: SSE streams there, while
the WSGI live server would buffer the async stream). The visitor sees the answer grow token by
token, the history is back after a reload, and a person's reply shows "Le atiende una persona".
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from ai_agents.channels import webchat
from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.agents import agent_create
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
]
ANSWER = "Abrimos de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a 14:00."
SHADOW = "document.querySelector('[data-erp-webchat]').shadowRoot"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    # The sync API runs an event loop in this thread; the ORM would refuse to run here
    # (browser-tests.md pitfall 6), so only while the browser lives.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as pw:
            chromium = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def asgi_server(transactional_db: Any, settings: Any) -> Iterator[str]:
    """The app under uvicorn in a thread of this process (so it uses the test database)."""
    import uvicorn
    from django.core.asgi import get_asgi_application

    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        get_asgi_application(), lifespan="off", log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def shop() -> Iterator[FakeServer]:
    """The customer's site: another origin (another port) on loopback. (A made-up host served
    by Playwright would count as a public site calling a loopback one, which Chromium's local
    network access rules block; real sites and our host are both public.)"""
    server = FakeServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def binding(tenant_a: Any, shop: FakeServer) -> ChannelBinding:
    cache.clear()  # per-IP counters
    agent = agent_create(
        tenant=tenant_a,
        data={
            "name": "Lucía",
            "system_prompt": "Eres Lucía.",
            "processing_config": {
                "llm_retry_delay_ms": 0,
                "llm_timeout_ms": 15000,
                "total_timeout_ms": 20000,
            },
        },
    )
    return ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, agent=agent, type=ChannelBinding.Type.WEBCHAT, allowed_origins=[shop.url]
    )


def _shop_page(server: str, key: str) -> str:
    return (
        "<!doctype html><html lang='es'><head><meta charset='utf-8'><title>Tienda</title></head>"
        "<body><h1>Tienda</h1><a href='#'>Un enlace de la página</a>"
        f'<script src="{server}/widget.js" data-key="{key}" async></script></body></html>'
    )


@pytest.fixture
def console_errors() -> list[str]:
    return []


@pytest.fixture
def page(
    browser: Any,
    asgi_server: str,
    binding: ChannelBinding,
    shop: FakeServer,
    console_errors: list[str],
) -> Iterator[Any]:
    context = browser.new_context(locale="es-ES")
    context.set_default_timeout(15_000)
    # The customer's page: no inline script or style allowed, only our host.
    csp = (
        f"default-src 'none'; script-src {asgi_server}; connect-src {asgi_server}; "
        "style-src 'self'; img-src 'self'; base-uri 'none'"
    )
    shop.route(
        "GET",
        r"^/$",
        FakeResponse(
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp},
            body=_shop_page(asgi_server, binding.token).encode(),
        ),
    )
    pg = context.new_page()
    pg.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    yield pg
    context.close()


def test_answer_streams_token_by_token_and_history_survives_reload(
    page: Any,
    binding: ChannelBinding,
    fake_google: FakeGoogle,
    owner: Persona,
    monkeypatch: pytest.MonkeyPatch,
    console_errors: list[str],
    shop: FakeServer,
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setattr(webchat, "POLL_INTERVAL_MS", 300)
    fake_google.push(
        fake_google.reply_json(
            {"action": "respond", "answer": ANSWER, "confidence": 0.9}, chunks=6, chunk_delay=0.4
        )
    )
    page.goto(f"{shop.url}/")
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
    box.fill("¿Qué horario tienen?")
    box.press("Enter")

    # Partial text while the model is still writing (polled every animation frame).
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
    expect(log.locator("[data-wc=message][data-role=user] [data-wc=text]")).to_have_text(
        "¿Qué horario tienen?"
    )

    # Reload: the panel reopens with the same history (token in the page's localStorage).
    page.reload()
    messages = page.locator("[data-wc=message]")
    expect(messages).to_have_count(2)
    expect(messages.locator("[data-wc=text]")).to_have_text(["¿Qué horario tienen?", ANSWER])
    assert len(fake_google.generate_requests) == 1

    # A person takes over in the staff inbox and replies: the visitor sees it while polling.
    owner.user.first_name = "Ana"
    owner.user.save()
    conversation = Conversation.objects.for_tenant(binding.tenant).get()
    Conversation.objects.for_tenant(binding.tenant).filter(pk=conversation.pk).update(
        status=Conversation.Status.ESCALATED, assigned_to=owner.user
    )
    Message.objects.for_tenant(binding.tenant).create(
        tenant=binding.tenant,
        conversation=conversation,
        agent=binding.agent,
        role=Message.Role.ASSISTANT,
        content="Hola, soy Ana. Le atiendo yo.",
        author=owner.user,
    )
    expect(page.locator("[data-wc=state]")).to_have_text("Le atiende una persona")
    human = page.locator("[data-wc=message][data-human=true]")
    expect(human.locator("[data-wc=text]")).to_have_text("Hola, soy Ana. Le atiendo yo.")
    expect(human.locator("[data-wc=author]")).to_have_text("Ana")

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


def test_demo_page_same_origin_in_english(
    page: Any,
    asgi_server: str,
    binding: ChannelBinding,
    owner: Persona,
    fake_google: FakeGoogle,
    console_errors: list[str],
) -> None:
    from playwright.sync_api import expect

    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": "We open at 8.", "confidence": 1})
    )
    page.goto(f"{asgi_server}/admin/login/?next=/webchat/demo%3Fkey%3D{binding.token}%26lang%3Den")
    page.fill("#id_username", owner.user.username)
    page.fill("#id_password", "pass-1234")
    page.click("input[type=submit]")
    page.wait_for_url("**/webchat/demo**")

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
