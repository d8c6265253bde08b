"""The statistics page in Debian's Chromium (Playwright) with the hand-checked week of
stats_helpers.py: the figures, the three charts drawn by the vendored Chart.js, the filters,
the "add to the knowledge base" action opening the prefilled admin form; in English on a phone
(390x844); axe-core on both."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ai_agents.services.knowledge import knowledge_base_create
from ai_agents.tests.stats_helpers import PERIOD, stats_week
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, PHONE, admin_login, context_new
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

PAGE = f"/stats/?{urlencode(PERIOD)}"
TARGETS = "#content a, #content button, #content input, #content select"


def _value(page: Any, card: str) -> str:
    return str(page.locator(f"#card-{card} .value").inner_text())


def test_the_week_charts_filters_and_the_knowledge_action(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    stats_week(owner.tenant, owner.user)
    stats_week(outsider.tenant, outsider.user)
    knowledge_base_create(tenant=owner.tenant, name="Preguntas frecuentes")
    context = context_new(browser, base_url=asgi_server, viewport={"width": 1366, "height": 900})
    try:
        page = context.new_page()
        admin_login(page, owner, PAGE)
        expect(page.locator("h1")).to_have_text("Estadísticas · Acme")
        assert _value(page, "conversations") == "7"
        assert _value(page, "resolved") == "2"
        expect(page.locator("#card-resolved .detail")).to_have_text("28,6 %")
        assert _value(page, "bot-first") == "mediana 3,0 s · p90 7,6 s"
        assert _value(page, "cost-resolved") == "0,0400 USD"
        # The charts are drawn (Chart.js served from our static files), one dataset each...
        expect(page.locator("#chart-days")).to_have_attribute("data-drawn", "3")
        expect(page.locator("#chart-reasons")).to_have_attribute("data-drawn", "1")
        expect(page.locator("#chart-first")).to_have_attribute("data-drawn", "2")
        expect(page.locator("#stats-reasons")).to_contain_text(
            "El asistente no estaba seguro de la respuesta: 1"
        )
        first = page.locator("#stats-unanswered li").first
        expect(first).to_contain_text("¿Hacen envíos a Canarias?")
        expect(first).to_contain_text("3 veces")
        page.screenshot(path=str(tmp_path / "stats_laptop.png"), full_page=True)
        assert axe_check(page) == []
        # The CSV link streams through the ASGI server: a header and the 7 conversations.
        href = page.locator("#export-conversations").get_attribute("href")
        export = page.request.get(href)
        assert export.headers["content-type"] == "text/csv; charset=utf-8"
        assert len(export.text().strip().splitlines()) == 8

        page.select_option("#stats-agent", label="Bruno")
        page.locator("#stats-filters button").click()
        page.wait_for_url("**agent=**")
        expect(page.locator("#card-conversations .value")).to_have_text("2")
        expect(page.locator("#stats-unanswered li")).to_have_count(1)

        page.locator("#stats-unanswered .add-kb").click()
        page.wait_for_url("**/admin/ai_agents/document/add/**")
        expect(page.locator("#id_title")).to_have_value("¿Cuál es el horario del sábado?")
        expect(page.locator("#id_text")).to_have_value(
            "Pregunta: ¿Cuál es el horario del sábado?\n\nRespuesta: "
        )
        page.select_option("#id_knowledge_base", label="Preguntas frecuentes")
        page.locator("#id_text").press("End")
        page.keyboard.type("De 9 a 14 h.")
        page.locator("#document-text-form input[type=submit]").click()
        expect(page.locator(".messagelist")).to_contain_text("Documento añadido")
    finally:
        context.close()


def test_in_english_on_a_phone(
    browser: Any, asgi_server: str, owner: Persona, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    stats_week(owner.tenant, owner.user)
    phone = context_new(browser, base_url=asgi_server, locale="en-US", **PHONE)
    try:
        page = phone.new_page()
        admin_login(page, owner, PAGE)
        expect(page.locator("h1")).to_have_text("Statistics · Acme")
        expect(page.locator("#card-resolved dt")).to_have_text("Resolved by the AI")
        expect(page.locator("#card-bot-first .value")).to_have_text("median 3.0 s · p90 7.6 s")
        expect(page.locator("#stats-unanswered li").first).to_contain_text("3 times")
        expect(page.locator("#stats-unanswered .add-kb").first).to_have_text(
            "Add to the knowledge base"
        )
        expect(page.locator("#chart-days")).to_have_attribute("data-drawn", "3")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        small = page.evaluate(
            """() => [...document.querySelectorAll(TARGETS)]
                .filter(e => e.offsetParent !== null)
                .filter(e => e.getBoundingClientRect().height < 44)
                .map(e => e.outerHTML.slice(0, 80))""".replace("TARGETS", repr(TARGETS))
        )
        assert small == []
        font = page.locator("#stats-from").evaluate("e => getComputedStyle(e).fontSize")
        assert font == "16px"
        page.screenshot(path=str(tmp_path / "stats_phone_en.png"), full_page=True)
        assert axe_check(page) == []
    finally:
        phone.close()
