"""The customer's answer to the bot's offer of a person: accept, decline, or something else
(answered as usual)."""

from __future__ import annotations

import pytest

from ai_agents.rules.escalation import EscalationTrigger
from ai_agents.rules.offer import offer_decision, offer_reply


@pytest.mark.parametrize(
    "text",
    [
        "sí",
        "Si",
        "SI POR FAVOR",
        "sí por favor",
        "si porfa",
        "claro que sí",
        "ok pásame",
        "ok, pasame con alguien",
        "va, sale",
        "de acuerdo",
        "sí, con una persona por favor",
        "yes",
        "yes please",
        "Sure, go ahead",
        "yeah, I'd like that",
        "por favor",
    ],
)
def test_accepts(text: str) -> None:
    assert offer_reply(text) == "accept"


@pytest.mark.parametrize(
    "text",
    [
        "no",
        "No gracias",
        "no, muchas gracias",
        "ahora no",
        "así está bien, gracias",
        "nel",
        "no thanks",
        "No, thank you",
        "nope",
        "I'm fine",
        "no es necesario",
    ],
)
def test_declines(text: str) -> None:
    assert offer_reply(text) == "decline"


@pytest.mark.parametrize(
    "text",
    [
        "sí, pero ¿cuánto cuesta la concha?",
        "¿a qué hora abren?",
        "gracias",
        "ok gracias por la info, ¿y los domingos abren?",
        "yes, and do you deliver?",
        "",
        "sí sí sí sí sí sí sí sí sí sí sí sí",
    ],
)
def test_anything_else_is_not_an_answer_to_the_offer(text: str) -> None:
    assert offer_reply(text) is None


def test_the_decision_takes_the_configured_user_request_priority_and_message() -> None:
    default = offer_decision([])
    assert (default.reason, default.priority, default.trigger_type) == (
        "user_request",
        "high",
        "user_request",
    )
    assert default.detail == "el cliente aceptó la oferta de hablar con una persona"
    configured = offer_decision(
        [
            EscalationTrigger(type="keyword", priority="urgent", keywords=("x",)),
            EscalationTrigger(type="user_request", priority="medium", message="Ya le paso."),
        ]
    )
    assert (configured.priority, configured.message) == ("medium", "Ya le paso.")
