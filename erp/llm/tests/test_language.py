"""The customer's language guessed from their words (es/en), for answers written without a
model."""

from __future__ import annotations

import pytest

from erp.llm.language import customer_language, guess_language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("¿A qué hora abren los sábados?", "es"),
        ("a q hora abren el sabado", "es"),
        ("CUANTO CUESTA EL ENVIO", "es"),
        ("hay estacionamiento?", "es"),
        ("Do you open on Saturdays?", "en"),
        ("how much is a cinnamon roll?", "en"),
        ("Is the place wheelchair accessible?", "en"),
        ("ok", None),
        ("Bolillo", None),
    ],
)
def test_guess(text: str, expected: str | None) -> None:
    assert guess_language(text) == expected


def test_the_latest_telling_text_wins_then_the_default() -> None:
    assert customer_language(["ok", "What time do you close?", "hola"]) == "en"
    assert customer_language(["ok", "👍"], default="en") == "en"
    assert customer_language([], default="fr") == "es"
