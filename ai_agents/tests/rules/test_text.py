import pytest

from ai_agents.rules.text import (
    HUMAN_AGENT_EXCLUDES,
    contains_phrase,
    first_matching_phrase,
    normalize,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("¿Dónde  ESTÁ mi pedido?", "donde esta mi pedido"),
        ("  Camión\t\nNº 5 ", "camion no 5"),
        ("ÑANDÚ", "nandu"),
        ("straße", "strasse"),
        ("", ""),
        ("!!!", ""),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_match_is_case_and_accent_insensitive() -> None:
    assert contains_phrase("¿DÓNDE está mi ENVIO?", "envío")
    assert contains_phrase("donde esta mi envío", "dónde está")


def test_substrings_never_fire() -> None:
    assert not contains_phrase("hay agentes disponibles?", "agente")
    assert not contains_phrase("el reagente se agotó", "agente")
    assert not contains_phrase("precios", "precio")
    assert contains_phrase("agente!", "agente")


def test_multi_word_phrase_needs_contiguous_words() -> None:
    assert contains_phrase("Quiero HABLAR con un humano, ya.", "hablar con un humano")
    assert not contains_phrase("hablar con un ser humano", "hablar con un humano")
    assert not contains_phrase("humano", "hablar con un humano")


def test_exclusion_blocks_only_the_enclosed_occurrence() -> None:
    excludes = HUMAN_AGENT_EXCLUDES
    assert contains_phrase("quiero un agente", "agente", excludes=excludes)
    assert not contains_phrase("¿Cuánto cobra el agente de envíos?", "agente", excludes=excludes)
    assert not contains_phrase("soy agente inmobiliario", "agente", excludes=excludes)
    assert contains_phrase(
        "el agente de envíos no llegó, quiero un agente", "agente", excludes=excludes
    )
    # without excludes the plain rule applies
    assert contains_phrase("¿Cuánto cobra el agente de envíos?", "agente")


def test_configured_exclude_list() -> None:
    assert not contains_phrase("mi pedido de prueba", "pedido", excludes=["pedido de prueba"])
    assert contains_phrase("mi pedido real", "pedido", excludes=["pedido de prueba"])


def test_empty_phrase_never_matches() -> None:
    assert not contains_phrase("algo", "")
    assert not contains_phrase("algo", "¿?")


def test_first_matching_phrase() -> None:
    assert (
        first_matching_phrase("necesito una cotización", ["precio", "cotizacion"]) == "cotizacion"
    )
    assert first_matching_phrase("nada", ["precio"]) is None


def test_overlapping_exclusion_blocks_multi_word_phrase() -> None:
    excludes = HUMAN_AGENT_EXCLUDES
    assert not contains_phrase(
        "quiero hablar con un agente de seguros", "hablar con un agente", excludes=excludes
    )
    assert contains_phrase("quiero hablar con un agente", "hablar con un agente", excludes=excludes)
