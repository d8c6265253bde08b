"""The agent form's widgets in Debian's Chromium (issue #17): every JSON block edited through its
widgets, saved, stored as set, shown again on reopening; a bad trigger named in words at its
field; "Avanzado" shows the JSON; "Probar conexión" says what happened; Spanish and English;
axe; a phone's width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ai_agents.models import Agent
from ai_agents.services.agents import agent_update
from ai_agents.tests.handoff_helpers import agent_for
from erp.testing.accessibility import AXE_JS, BLOCKING
from erp.testing.browser import BROWSER_TEST, admin_login, context_new
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona

pytestmark = BROWSER_TEST

PHONE = {"width": 390, "height": 844}
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"  # for a human look


def _url(agent: Agent) -> str:
    return f"/admin/ai_agents/agent/{agent.pk}/change/"


def _axe_ours(page: Any) -> list[str]:
    """Serious and critical axe findings inside our widgets and the model panel (the admin's
    own widgets, e.g. the knowledge bases' filter, are Django's)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    found = page.evaluate(
        "async () => (await axe.run({include: [['.agent-config'], ['.agent-model-status']]},"
        " {resultTypes: ['violations']})).violations"
    )
    return [f"{v['id']}: {v['help']}" for v in found if v.get("impact") in BLOCKING]


def _shots(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for field in ("model_status", "history_config", "escalation_triggers"):
        shot = SHOTS / f"agent-form-{name}-{field}.png"
        page.locator(f".field-{field}").screenshot(path=str(shot))


def _edit_with_widgets(page: Any) -> None:
    history = page.locator(".field-history_config")
    history.get_by_label("Cuando la conversación es larga").select_option("summarize")
    history.get_by_label("Mensajes enviados al modelo").fill("12")
    processing = page.locator(".field-processing_config")
    processing.get_by_label("Fragmentos recuperados").fill("7")
    processing.get_by_label("Mostrar la respuesta mientras se escribe").uncheck()
    page.locator(".field-tools_enabled").get_by_label(
        "Buscar en las bases de conocimiento (knowledge_search)"
    ).check()

    triggers = page.locator(".field-escalation_triggers")
    triggers.get_by_role("button", name="Quitar: Disparador 5").click()  # confidence
    triggers.get_by_role("button", name="Añadir disparador").click()
    added = triggers.locator(".agent-config-item").nth(4)
    added.get_by_label("Palabras clave").fill("reembolso")
    added.get_by_label("Palabras clave").press("Enter")
    added.get_by_label("Palabras clave").fill("devolución")
    added.get_by_label("Palabras clave").press("Enter")
    added.get_by_role("button", name="Quitar «devolución»").click()
    added.get_by_label("Prioridad").select_option("high")

    intents = page.locator(".field-intent_detection")
    intents.get_by_role("button", name="Añadir intención").click()
    new_intent = intents.locator(".agent-config-item").last
    new_intent.get_by_label("Nombre").fill("refund")
    new_intent.get_by_label("Ejemplos de mensajes").fill("quiero mi dinero")
    new_intent.get_by_label("Ejemplos de mensajes").press("Enter")
    new_intent.get_by_label("Al detectarla").select_option("trigger_escalation")


def _assert_stored(agent: Agent) -> None:
    agent.refresh_from_db()
    assert agent.history_config["truncation_strategy"] == "summarize"
    assert agent.history_config["max_messages"] == 12
    assert agent.processing_config["rag_top_k"] == 7
    assert agent.processing_config["streaming_enabled"] is False
    assert agent.tools_enabled == ["knowledge_search"]
    types = [t["type"] for t in agent.escalation_triggers]
    assert types == ["user_request", "loop_detection", "intent", "sentiment", "keyword"]
    assert agent.escalation_triggers[-1] == {
        "type": "keyword",
        "condition": {"keywords": ["reembolso"]},
        "priority": "high",
    }
    assert agent.intent_detection["intents"][-1] == {
        "intent": "refund",
        "keywords": [],
        "examples": ["quiero mi dinero"],
        "action": "trigger_escalation",
    }


def _assert_widgets_show_it(page: Any) -> None:
    from playwright.sync_api import expect

    history = page.locator(".field-history_config")
    expect(history.get_by_label("Cuando la conversación es larga")).to_have_value("summarize")
    expect(history.get_by_label("Mensajes enviados al modelo")).to_have_value("12")
    processing = page.locator(".field-processing_config")
    expect(processing.get_by_label("Fragmentos recuperados")).to_have_value("7")
    expect(processing.get_by_label("Mostrar la respuesta mientras se escribe")).not_to_be_checked()
    tools = page.locator(".field-tools_enabled")
    search = tools.get_by_label("Buscar en las bases de conocimiento (knowledge_search)")
    expect(search).to_be_checked()
    expect(tools.get_by_label("Leer los datos del contacto (contact_get)")).not_to_be_checked()
    items = page.locator(".field-escalation_triggers .agent-config-item")
    expect(items).to_have_count(5)
    expect(items.nth(4).get_by_label("Tipo")).to_have_value("keyword")
    expect(items.nth(4).locator(".agent-config-chip")).to_have_text(["reembolso×"])
    expect(items.nth(4).get_by_label("Prioridad")).to_have_value("high")
    intent = page.locator(".field-intent_detection .agent-config-item").last
    expect(intent.get_by_label("Nombre")).to_have_value("refund")
    expect(intent.locator(".agent-config-chip")).to_have_text(["quiero mi dinero×"])
    # "Avanzado" is the raw JSON, closed while the widgets work.
    raw = page.locator(".field-escalation_triggers .agent-config-raw")
    expect(raw.locator("textarea")).to_be_hidden()
    raw.locator("summary").click()
    expect(raw.locator("textarea")).to_be_visible()
    expect(raw.locator("textarea")).to_have_value(
        __import__("re").compile(r'"keywords": \[\s*"reembolso"\s*\]')
    )


def _edit_the_json_by_hand(page: Any) -> None:
    """The "Avanzado" textarea edited by hand rebuilds the widgets; invalid JSON says so."""
    from playwright.sync_api import expect

    triggers = page.locator(".field-escalation_triggers")
    raw = triggers.locator(".agent-config-raw")
    if not raw.locator("textarea").is_visible():
        raw.locator("summary").click()
    raw.locator("textarea").fill('[{"type": "sentiment", "condition": {"threshold": -0.9}}]')
    raw.locator("textarea").dispatch_event("change")
    expect(triggers.locator(".agent-config-item")).to_have_count(1)
    expect(triggers.get_by_label("Umbral")).to_have_value("-0.9")
    raw.locator("textarea").fill("[{")
    raw.locator("textarea").dispatch_event("change")
    expect(triggers.locator(".agent-config-invalid")).to_have_text(
        "El JSON no es válido; corríjalo en «Avanzado» para usar el formulario."
    )
    expect(triggers.locator(".agent-config-ui")).to_be_hidden()


def test_widgets_round_trip_and_a_bad_trigger_in_words(
    browser: Any, asgi_server: str, owner: Persona
) -> None:
    from playwright.sync_api import expect

    agent = agent_for(owner.tenant)
    context = context_new(browser, base_url=asgi_server)
    page = context.new_page()
    try:
        admin_login(page, owner, _url(agent))
        assert _axe_ours(page) == []
        _edit_with_widgets(page)
        page.locator("input[name=_continue]").click()
        expect(page.locator(".messagelist .success")).to_be_visible()
        _assert_stored(agent)
        page.goto(_url(agent))  # reopened
        _assert_widgets_show_it(page)
        _shots(page, "laptop-es")

        # A keyword trigger without keywords: refused, said in words at the field.
        triggers = page.locator(".field-escalation_triggers")
        triggers.get_by_role("button", name="Añadir disparador").click()
        page.locator("input[name=_continue]").click()
        expect(triggers.locator(".errorlist")).to_have_text(
            "Disparador 6 (keyword) · keywords: la lista no puede estar vacía."
        )
        expect(triggers.locator(".agent-config-item")).to_have_count(6)  # still as typed
        assert _axe_ours(page) == []
        agent.refresh_from_db()
        assert len(agent.escalation_triggers) == 5
        _edit_the_json_by_hand(page)
    finally:
        context.close()


def test_english_phone_and_probar_conexion(
    browser: Any, asgi_server: str, owner: Persona, fake_google: FakeGoogle
) -> None:
    from playwright.sync_api import expect

    agent = agent_update(agent=agent_for(owner.tenant), data={"provider": "google"})
    context = context_new(browser, base_url=asgi_server, locale="en-US", viewport=PHONE)
    page = context.new_page()
    try:
        admin_login(page, owner, _url(agent))
        expect(page.locator("html")).to_have_attribute("lang", "en")
        triggers = page.locator(".field-escalation_triggers")
        add = triggers.get_by_role("button", name="Add trigger")
        expect(add).to_be_visible()
        expect(triggers.locator(".agent-config-raw summary")).to_have_text("Advanced (JSON)")
        expect(
            triggers.locator(".agent-config-item").first.get_by_label("Priority")
        ).to_be_visible()
        box = triggers.locator(".agent-config").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        assert add.bounding_box()["height"] >= 44
        font = triggers.locator("select").first.evaluate("e => getComputedStyle(e).fontSize")
        assert font == "16px"
        assert _axe_ours(page) == []

        button = page.get_by_role("button", name="Test connection")
        button.click()
        result = page.locator(".agent-model-ping-result")
        expect(result).to_contain_text("Connection works: google · gemma-4-26b-a4b-it answered in")
        fake_google.push(fake_google.invalid_key())
        button.click()
        expect(result).to_contain_text("The API key is not valid or has no access to this model.")
        expect(result).to_contain_text("API key not valid")
        assert "fake-google-key" not in page.content()
        _shots(page, "phone-en")
    finally:
        context.close()
