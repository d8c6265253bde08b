"""The binding's look in Debian's Chromium: colour (and the text colour chosen for it), title,
greeting, launcher text, position and avatar on a customer's page with a strict CSP; owner
texts that look like HTML stay text; on a phone (390x844) the open chat fills the screen with a
16 px input and 44 px targets, and the demo page's snippet wraps instead of scrolling sideways.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ai_agents.channels.webchat.appearance import appearance_clean
from ai_agents.models import ChannelBinding
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

CDN = "https://cdn.acme.example"
AVATAR_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">'
    b'<rect width="64" height="64" fill="#c00"/></svg>'
)
PHONE = {"width": 390, "height": 844}
# What the widget draws, read inside its shadow root.
LOOK_JS = """() => {
  const root = document.querySelector('[data-erp-webchat]').shadowRoot;
  const css = (sel, prop) => getComputedStyle(root.querySelector(sel))[prop];
  const box = (sel) => { const r = root.querySelector(sel).getBoundingClientRect();
    return {x: r.x, y: r.y, width: r.width, height: r.height}; };
  return {
    launcherBg: css('[data-wc=launcher]', 'backgroundColor'),
    launcherFg: css('[data-wc=launcher]', 'color'),
    launcher: box('[data-wc=launcher]'),
    launcherShown: css('[data-wc=launcher]', 'display') !== 'none',
    panel: box('[data-wc=panel]'),
    headBg: css('.head', 'backgroundColor'),
    headFg: css('.head', 'color'),
    inputFont: css('[data-wc=input]', 'fontSize'),
    close: box('[data-wc=close]'),
    send: box('[data-wc=send]'),
    title: root.querySelector('[data-wc=title]').textContent,
    greeting: root.querySelector('[data-wc=greeting]').textContent,
    greetingBg: css('[data-wc=greeting]', 'backgroundColor'),
    avatarShown: !root.querySelector('[data-wc=avatar]').hidden,
    avatarWidth: root.querySelector('[data-wc=avatar]').naturalWidth,
    markup: root.querySelectorAll('b, script, img:not([data-wc=avatar]), [onerror]').length,
    pageWidth: document.documentElement.scrollWidth,
  };
}"""


def _shop_page(shop: FakeServer, *, server: str, key: str, csp: str) -> str:
    html = (
        "<!doctype html><html lang='es'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<title>Tienda Acme</title></head><body><main><h1>Tienda Acme</h1></main>"
        f'<script src="{server}/widget.js" data-key="{key}" async></script></body></html>'
    )
    headers = {"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp}
    shop.route("GET", r"^/look$", FakeResponse(headers=headers, body=html.encode()))
    return f"{shop.url}/look"


@pytest.fixture
def styled(webchat_binding: ChannelBinding) -> ChannelBinding:
    webchat_binding.appearance = appearance_clean(
        {
            "color": "#ffd400",
            "title": "Tienda Acme",
            "greeting": "¡Bienvenido a Acme!",
            "launcher_text": "¿Hablamos?",
            "position": "bottom-left",
            "avatar_url": f"{CDN}/logo.svg",
        }
    )
    webchat_binding.save()
    return webchat_binding


@pytest.fixture
def desktop(browser: Any) -> Iterator[Any]:
    context = context_new(browser, viewport={"width": 1280, "height": 800})
    context.route(
        f"{CDN}/**",
        lambda route: route.fulfill(status=200, content_type="image/svg+xml", body=AVATAR_SVG),
    )
    yield context
    context.close()


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    # bypass_csp: axe-core is injected into the page under test.
    context = context_new(browser, viewport=PHONE, bypass_csp=True, has_touch=True)
    yield context
    context.close()


def test_the_configured_look_shows_on_the_customers_page(
    desktop: Any, asgi_server: str, styled: ChannelBinding, shop: FakeServer
) -> None:
    from playwright.sync_api import expect

    csp = (
        f"default-src 'none'; script-src {asgi_server}; connect-src {asgi_server}; "
        f"style-src 'self'; img-src {CDN}; base-uri 'none'"
    )
    url = _shop_page(shop, server=asgi_server, key=styled.token, csp=csp)
    page = desktop.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)

    launcher = page.get_by_role("button", name="¿Hablamos?")
    expect(launcher).to_be_visible()
    closed = page.evaluate(LOOK_JS)
    assert (closed["launcherBg"], closed["launcherFg"]) == ("rgb(255, 212, 0)", "rgb(0, 0, 0)")
    assert closed["launcher"]["x"] == 16  # bottom-left
    assert closed["launcher"]["y"] + closed["launcher"]["height"] == 800 - 16
    assert closed["launcher"]["height"] >= 44

    launcher.click()
    expect(page.get_by_role("dialog", name="Tienda Acme")).to_be_visible()
    expect(page.locator("[data-wc=greeting]")).to_have_text("¡Bienvenido a Acme!")
    page.wait_for_function(
        "() => document.querySelector('[data-erp-webchat]').shadowRoot"
        ".querySelector('[data-wc=avatar]').naturalWidth > 0"
    )
    shown = page.evaluate(LOOK_JS)
    assert (shown["headBg"], shown["headFg"]) == ("rgb(255, 212, 0)", "rgb(0, 0, 0)")
    assert shown["greetingBg"] == "rgb(238, 241, 245)"  # a bot bubble, not a stored message
    assert shown["panel"]["x"] == 16 and shown["panel"]["width"] == 370
    assert shown["avatarShown"] and shown["avatarWidth"] == 64
    assert not errors, errors


def test_phone_full_screen_16px_input_and_owner_markup_stays_text(
    phone: Any, asgi_server: str, webchat_binding: ChannelBinding, shop: FakeServer
) -> None:
    from playwright.sync_api import expect

    title = '<img src=x onerror="window.pwned=1">Acme'
    greeting = "<b>Hola</b><script>window.pwned=2</script>"
    webchat_binding.appearance = appearance_clean({"title": title, "greeting": greeting})
    webchat_binding.save()
    url = _shop_page(shop, server=asgi_server, key=webchat_binding.token, csp="default-src *")
    page = phone.new_page()
    page.goto(url)

    launcher = page.get_by_role("button", name="Abrir el chat")
    launcher.click()
    expect(page.get_by_role("dialog", name=title)).to_be_visible()
    expect(page.locator("[data-wc=greeting]")).to_have_text(greeting)
    look = page.evaluate(LOOK_JS)
    assert look["panel"] == {"x": 0, "y": 0, **PHONE}
    assert not look["launcherShown"]  # under the full-screen chat: closed from its header
    assert look["inputFont"] == "16px"
    for target in ("close", "send"):
        assert look[target]["width"] >= 44 and look[target]["height"] >= 44, (target, look)
    assert look["title"] == title and look["markup"] == 0
    assert page.evaluate("window.pwned") is None
    assert look["pageWidth"] <= PHONE["width"]
    assert axe_check(page) == []

    page.get_by_role("button", name="Cerrar el chat").click()
    expect(launcher).to_be_visible()
    assert page.evaluate(LOOK_JS)["launcher"]["height"] >= 44


@pytest.mark.parametrize(
    ("locale", "lang", "heading", "launcher"),
    [("es-ES", "es", "Demostración", "Abrir el chat"), ("en-GB", "en", "demo", "Open chat")],
)
def test_demo_page_snippet_wraps_on_a_phone(
    browser: Any,
    asgi_server: str,
    webchat_binding: ChannelBinding,
    owner: Persona,
    locale: str,
    lang: str,
    heading: str,
    launcher: str,
) -> None:
    from playwright.sync_api import expect

    context = context_new(browser, viewport=PHONE, bypass_csp=True, locale=locale)
    page = context.new_page()
    path = f"/webchat/demo?key={webchat_binding.token}&lang={lang}"
    admin_login(page, owner, path, base=asgi_server)
    expect(page.get_by_role("heading", level=1)).to_contain_text(heading)
    snippet = page.locator("[data-snippet]")
    expect(snippet).to_contain_text(webchat_binding.token)
    assert snippet.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
    assert snippet.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.get_by_role("button", name=launcher)).to_be_visible()
    assert axe_check(page) == []
    context.close()


def test_admin_preview_follows_the_fields(
    browser: Any, asgi_server: str, webchat_binding: ChannelBinding, owner: Persona
) -> None:
    from playwright.sync_api import expect

    context = context_new(browser)
    page = context.new_page()
    admin_login(
        page,
        owner,
        f"/admin/ai_agents/channelbinding/{webchat_binding.pk}/change/",
        base=asgi_server,
    )
    preview = page.locator("[data-look-preview]")
    expect(preview.locator("[data-look-title]")).to_have_text("Lucía")
    expect(preview.locator("[data-look-launcher]")).to_have_text("Abrir el chat")

    page.fill("#id_look_color", "#ffd400")
    page.fill("#id_look_title", "<b>Tienda</b>")
    page.fill("#id_look_launcher_text", "¿Hablamos?")
    page.select_option("#id_look_position", "bottom-left")
    head = preview.locator("[data-look-head]")
    expect(head).to_have_css("background-color", "rgb(255, 212, 0)")
    expect(head).to_have_css("color", "rgb(0, 0, 0)")
    expect(preview.locator("[data-look-title]")).to_have_text("<b>Tienda</b>")
    assert preview.locator("b").count() == 0
    expect(preview.locator("[data-look-launcher]")).to_have_text("¿Hablamos?")
    expect(preview.locator("[data-look-row]")).to_have_css("justify-content", "flex-start")
    page.fill("#id_look_title", "")
    expect(preview.locator("[data-look-title]")).to_have_text("Lucía")  # empty: the default
    context.close()
