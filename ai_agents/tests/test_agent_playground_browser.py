"""The "Probar agente" page in Debian's Chromium (Playwright): reached from the agent's admin
page, it shows the reply, the passages with their scores and a fired keyword trigger; a saved
test is added and "Ejecutar todas" (run by a real Celery worker, the page polling the run)
shows its result, then, once the documents are removed, the regression and what changed;
English; a phone
(390x844: 44 px targets, 16 px fields); axe-core finds no serious issue; another tenant's
owner gets 404."""

from __future__ import annotations

from typing import Any

from ai_agents.services.agents import agent_create, agent_update
from ai_agents.tests.conversations.support import FAST, shipping_kb
from ai_agents.tests.test_agent_playground_api import REFUND
from erp.tenancy.scoping import tenant_scope
from erp.testing.accessibility import axe_check
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST


def _agent(persona: Persona) -> Any:
    with tenant_scope(persona.tenant):
        kb = shipping_kb(persona.tenant)
        return agent_create(
            tenant=persona.tenant,
            data={
                "name": "Lucía",
                "system_prompt": "Eres {{agent_name}}.",
                "provider": "offline",
                "knowledge_bases": [str(kb.pk)],
                "escalation_triggers": [REFUND],
                "processing_config": FAST,
            },
        )


def _ask(page: Any, text: str) -> None:
    page.fill("#pg-text", text)
    page.click("#pg-send")


def test_playground_shows_passages_and_a_fired_trigger_then_runs_saved_tests(
    browser: Any, asgi_server: str, celery_worker_process: Any, owner: Persona
) -> None:
    from playwright.sync_api import expect

    agent = _agent(owner)
    context = context_new(browser, base_url=asgi_server)
    try:
        page = context.new_page()
        admin_login(page, owner, f"/admin/ai_agents/agent/{agent.pk}/change/")
        page.get_by_role("link", name="Probar agente").click()
        page.wait_for_url(f"**/admin/ai_agents/agent/{agent.pk}/playground/")

        _ask(page, "¿Cuánto cuesta el envío?")
        expect(page.locator("#pg-reply")).to_contain_text("El envío cuesta 4,95 euros")
        first = page.locator("#pg-passages li").first
        expect(first).to_contain_text("envios.md")
        expect(first.locator(".pg-score")).to_have_text(_score_pattern())
        expect(page.locator("#pg-triggers .fired")).to_have_count(0)
        expect(page.locator("#pg-timings")).to_contain_text("llm:")
        expect(page.locator("#pg-options")).to_have_css("display", "none")  # none offered

        _ask(page, "Quiero un reembolso")
        fired = page.locator("#pg-triggers .pg-trigger.fired")
        expect(fired).to_have_count(1)
        expect(fired).to_have_text("Palabras clave (Alta): palabras: reembolso — disparado")
        expect(page.locator("#pg-escalation")).to_contain_text("palabra clave configurada, Alta")
        expect(page.locator("#pg-result")).not_to_contain_text("keyword")  # no internal code
        expect(page.locator("#pg-passages li").first).to_contain_text("envios.md")
        expect(page.locator("#pg-history li")).to_have_count(4)  # two questions, two replies
        assert axe_check(page) == []

        page.fill("#pg-case-question", "¿Cuánto cuesta el envío?")
        page.select_option("#pg-case-expectation", "contains")
        page.fill("#pg-case-text", "4,95")
        page.get_by_role("button", name="Guardar prueba").click()
        expect(page.locator("#pg-cases tr")).to_have_count(1)
        expect(page.locator("#pg-cases")).to_contain_text("sin ejecutar")
        page.click("#pg-run")
        expect(page.locator("#pg-run")).to_be_disabled()  # until the worker is done
        expect(page.locator("#pg-run-summary")).to_contain_text(
            "Pasan: 1, fallan: 0, regresiones: 0."
        )
        expect(page.locator("#pg-run")).to_be_enabled()
        expect(page.locator("#pg-run-summary")).to_contain_text("Primera ejecución.")
        expect(page.locator("#pg-cases .pg-passed")).to_have_text("pasa")
        assert axe_check(page) == []

        # The business drops its documents: the run says what changed and the case fails.
        agent_update(agent=agent, data={"knowledge_bases": []})
        page.click("#pg-run")
        summary = page.locator("#pg-run-summary")
        expect(summary).to_contain_text("Pasan: 0, fallan: 1, regresiones: 1.")
        expect(summary).to_contain_text("Cambió desde la ejecución anterior: documentos.")
        expect(summary).to_contain_text("Pruebas que cambiaron de resultado: 1.")
        expect(page.locator("#pg-cases .pg-regression")).to_have_text("regresión")
        expect(page.locator("#pg-cases")).to_contain_text("La respuesta no contiene «4,95».")
        expect(page.locator("#pg-cases .pg-changed")).to_have_count(1)
    finally:
        context.close()


def _score_pattern() -> Any:
    import re

    return re.compile(r"^(0|1)\.\d{3}$")


def test_english_on_a_phone_and_refused_to_another_tenant(
    browser: Any, asgi_server: str, owner: Persona, outsider: Persona
) -> None:
    from playwright.sync_api import expect

    agent = _agent(owner)
    url = f"/admin/ai_agents/agent/{agent.pk}/playground/"
    context = context_new(
        browser, base_url=asgi_server, locale="en-US", viewport={"width": 390, "height": 844}
    )
    try:
        page = context.new_page()
        admin_login(page, owner, url)
        expect(page.locator("h2#pg-try-title")).to_have_text("Try the agent")
        _ask(page, "Quiero un reembolso")
        expect(page.locator("#pg-triggers .fired")).to_contain_text("fired")
        expect(page.get_by_role("button", name="Run all")).to_be_visible()
        sizes = page.evaluate(
            """() => ({
                overflow: document.documentElement.scrollWidth > window.innerWidth,
                small: [...document.querySelectorAll('#playground button')]
                    .filter(b => b.offsetParent !== null)
                    .filter(b => b.getBoundingClientRect().height < 44).length,
                font: getComputedStyle(document.getElementById('pg-text')).fontSize,
            })"""
        )
        assert sizes == {"overflow": False, "small": 0, "font": "16px"}
        assert axe_check(page) == []
    finally:
        context.close()

    other = context_new(browser, base_url=asgi_server)
    try:
        page = other.new_page()
        admin_login(page, outsider, "/admin/")
        assert page.goto(url).status == 404
    finally:
        other.close()
