"""Issue 15 through POST /api/v1/agents/{id}/messages: the request-for-a-person detector and
loop detection as defaults, a tenant's own keyword triggers unchanged (two tenants), and the
escalation's reason, layer and detail kept on the reply."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.tests.conversations.support import create_agent, push_answer, reply_metadata, say
from erp.testing.fake_google import FakeGoogle


def _escalation_meta(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return dict(reply_metadata(api, body)["escalation"])


@pytest.mark.django_db
def test_default_agent_understands_requests_and_traps_a_keyword_agent_keeps_its_keywords(
    api_a: Any, api_b: Any, fake_google: FakeGoogle
) -> None:
    keywords = create_agent(
        api_a,
        escalation_triggers=[
            {"type": "keyword", "condition": {"keywords": ["gerente"]}, "priority": "high"}
        ],
    )
    defaults = create_agent(api_b, escalation_message="Le paso con una persona del equipo.")

    push_answer(fake_google, "El menú cuesta 15 euros por persona.")
    trap = say(api_b, defaults, "¿El menú es por persona?", contact="b-1")
    assert trap["escalation"] is None
    assert trap["reply"]["text"] == "El menú cuesta 15 euros por persona."
    asked = say(api_b, defaults, "¿Me pasas con facturación?", contact="b-2")
    assert asked["escalation"] == {"reason": "user_request", "priority": "medium"}
    assert asked["reply"]["text"] == "Le paso con una persona del equipo."
    assert len(fake_google.generate_requests) == 1  # decided before any model call
    meta = _escalation_meta(api_b, asked)
    assert meta["layer"] == "rules" and "me pasas con facturacion" in meta["detail"]

    # Tenant A configured only a keyword: the same request goes to its model, the keyword
    # escalates as the spec says.
    push_answer(fake_google, "Claro, ¿qué necesita de facturación?")
    other = say(api_a, keywords, "¿Me pasas con facturación?", contact="a-1")
    assert other["escalation"] is None
    manager = say(api_a, keywords, "Quiero ver al GERENTE", contact="a-2")
    assert manager["escalation"] == {"reason": "keyword_match", "priority": "high"}
    assert _escalation_meta(api_a, manager) == {
        "reason": "keyword_match",
        "priority": "high",
        "layer": "trigger",
        "detail": "palabra clave «gerente»",
    }
    assert api_b.get(f"/api/v1/conversations/{manager['conversation_id']}").status_code == 404


@pytest.mark.django_db
def test_the_same_question_again_offers_a_person_instead_of_the_same_answer(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Su pedido llegará en 3 a 5 días hábiles.")
    first = say(api_a, agent_id, "¿Dónde está mi pedido?", contact="c-1")
    assert first["escalation"] is None

    again = say(api_a, agent_id, "¿dónde está mi pedido??", contact="c-1")
    assert again["escalation"] == {"reason": "conversation_loop", "priority": "medium"}
    assert again["conversation_status"] == "escalated"
    assert len(fake_google.generate_requests) == 1
    assert _escalation_meta(api_a, again)["layer"] == "loop"


@pytest.mark.django_db
def test_two_identical_answers_in_a_row_offer_a_person_at_the_next_message(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    agent_id = create_agent(api_a)
    same = "Puede consultar el estado de su pedido en la sección Mis pedidos."
    push_answer(fake_google, same)
    assert say(api_a, agent_id, "¿Tienen la talla 28?", contact="c-2")["escalation"] is None
    push_answer(fake_google, same)  # one repeat may be right (two questions, one passage)
    assert say(api_a, agent_id, "¿Y en color azul?", contact="c-2")["escalation"] is None
    looped = say(api_a, agent_id, "¿Entonces sí o no?", contact="c-2")
    assert looped["escalation"] == {"reason": "conversation_loop", "priority": "medium"}
    assert len(fake_google.generate_requests) == 2  # not asked a third time
    meta = _escalation_meta(api_a, looped)
    assert meta["layer"] == "loop" and "misma respuesta" in meta["detail"]

    # Different answers in another conversation: no loop.
    push_answer(fake_google, "Abrimos de 9 a 18 h.")
    assert say(api_a, agent_id, "¿Qué horario tienen?", contact="c-3")["escalation"] is None
    push_answer(fake_google, "Sí, el sábado de 10 a 14 h.")
    assert say(api_a, agent_id, "¿Y el sábado?", contact="c-3")["escalation"] is None
    push_answer(fake_google, "Gracias a usted.")
    assert say(api_a, agent_id, "Muchas gracias por todo", contact="c-3")["escalation"] is None
