"""Delivery states and failure reasons in words: known codes, e-mail classes, unknown codes
(never the raw code), both languages; statuses only move forward."""

from __future__ import annotations

from django.utils import translation

from ai_agents.rules.delivery_labels import (
    delivery_error_label,
    delivery_status_label,
    status_moves_forward,
)


def test_reasons_are_words_in_the_readers_language_and_never_the_code() -> None:
    with translation.override("es"):
        assert delivery_error_label("131047").startswith("Han pasado más de 24 horas")
        assert delivery_error_label("smtp_550") == "El servidor de correo rechazó el mensaje"
        assert delivery_error_label("smtp_421") == (
            "El servidor de correo no aceptó el mensaje por ahora"
        )
        assert delivery_error_label("999999") == "El canal no pudo entregar el mensaje"
        assert delivery_status_label("delivered") == "Entregado"
        assert delivery_status_label("") == ""
    with translation.override("en"):
        assert delivery_error_label("bounced") == (
            "The e-mail was bounced by the recipient's server"
        )
        assert delivery_error_label("") == "The channel could not deliver the message"
        assert delivery_status_label("read") == "Read"


def test_a_status_never_moves_back() -> None:
    assert status_moves_forward("sent", "delivered")
    assert status_moves_forward("delivered", "read")
    assert not status_moves_forward("read", "delivered")
    assert not status_moves_forward("read", "read")
    assert status_moves_forward("read", "failed")
