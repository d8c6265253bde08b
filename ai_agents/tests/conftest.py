from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache

from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from ai_agents.tests.channels.whatsapp.media_support import media_root  # noqa: F401
from ai_agents.tests.channels.whatsapp.support import line, wa_binding, wa_settings  # noqa: F401
from ai_agents.tests.handoff_helpers import conv_a, conv_b  # noqa: F401
from erp.testing.browser import context_new
from erp.testing.fake_http import FakeResponse, FakeServer


@pytest.fixture(autouse=True)
def _fresh_whatsapp_bindings() -> Iterator[None]:
    """A binding a test cached (Redis) must not outlive the test's rolled-back rows: the next
    test may give its number to another tenant, or none."""
    from ai_agents.channels.whatsapp.bindings import cached_numbers_forget
    from ai_agents.channels.whatsapp.offered import markers_forget_here

    cached_numbers_forget()
    markers_forget_here()
    yield
    cached_numbers_forget()
    markers_forget_here()


@pytest.fixture
def run_tasks(django_capture_on_commit_callbacks: Any) -> Iterator[Any]:
    """`with run_tasks(): ...`: tasks queued on commit inside the block run in-process when
    it ends (Celery eager mode), as a worker would run them."""
    from erp.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield lambda: django_capture_on_commit_callbacks(execute=True)
    finally:
        app.conf.task_always_eager = previous


# --- the web chat on a customer's page, in a browser (erp.testing.browser) ----------------


@pytest.fixture
def shop() -> Iterator[FakeServer]:
    """The customer's site: another origin (another port) on loopback. (A made-up host served
    by Playwright would count as a public site calling a loopback one, which Chromium's local
    network access rules block; real sites and our host are both public.)"""
    with FakeServer() as server:
        yield server


@pytest.fixture
def webchat_binding(tenant_a: Any, shop: FakeServer) -> ChannelBinding:
    """A web chat binding of agent "Lucía" (tenant_a) that allows the shop's origin."""
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


def _shop_html(server: str, key: str) -> str:
    return (
        "<!doctype html><html lang='es'><head><meta charset='utf-8'><title>Tienda</title></head>"
        "<body><h1>Tienda</h1><a href='#'>Un enlace de la página</a>"
        f'<script src="{server}/widget.js" data-key="{key}" async></script></body></html>'
    )


@pytest.fixture
def console_errors() -> list[str]:
    return []


@pytest.fixture
def visitor_page(
    browser: Any,
    asgi_server: str,
    webchat_binding: ChannelBinding,
    shop: FakeServer,
    console_errors: list[str],
) -> Iterator[Any]:
    """A visitor's page (own browser context) on the shop, whose strict CSP allows no inline
    script or style, only our host; the widget of `webchat_binding` is embedded. Open
    `shop.url + "/"`."""
    context = context_new(browser)
    csp = (
        f"default-src 'none'; script-src {asgi_server}; connect-src {asgi_server}; "
        "style-src 'self'; img-src 'self'; base-uri 'none'"
    )
    shop.route(
        "GET",
        r"^/$",
        FakeResponse(
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp},
            body=_shop_html(asgi_server, webchat_binding.token).encode(),
        ),
    )
    page = context.new_page()

    def on_console(message: Any) -> None:
        if message.type == "error":
            console_errors.append(message.text)

    page.on("console", on_console)
    yield page
    context.close()
