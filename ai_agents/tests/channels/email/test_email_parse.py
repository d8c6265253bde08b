"""Reading raw MIME (units): what the model reads of plain, HTML, multipart, Gmail and Outlook
replies, subjects, and which mail is a machine's."""

from __future__ import annotations

import pytest

from ai_agents.channels.email.parse import email_parse, reply_subject, reply_text_extract
from ai_agents.tests.channels.email.support import eml


# --- Parsing (units) -------------------------------------------------------------------------
def test_plain_message_text_without_signature() -> None:
    parsed = email_parse(eml("plain"))
    assert parsed.message_id == "<plain-1@cliente.es>"
    assert parsed.sender == "ana@cliente.es"
    assert parsed.sender_name == "Ana Pérez"
    assert parsed.subject == "Horario de la tienda"
    assert parsed.text == "Hola, ¿a qué hora abrís el sábado?\n\nGracias,\nAna"
    assert parsed.machine == ""


def test_html_only_message_is_read_as_text() -> None:
    parsed = email_parse(eml("html_only"))
    assert "¿Hacéis envíos a Canarias?" in parsed.text
    assert "<" not in parsed.text
    assert "oculto" not in parsed.text


def test_multipart_prefers_plain_and_notes_attachments_unread() -> None:
    parsed = email_parse(eml("multipart"))
    assert parsed.text.startswith("Hola, adjunto la factura. ¿Podéis revisar el importe?")
    assert "iPhone" not in parsed.text
    assert "[Adjunto: factura.pdf (application/pdf, 73 B), no leído]" in parsed.text
    assert "refund" not in parsed.text.lower()
    assert [a.filename for a in parsed.attachments] == ["factura.pdf"]


def test_html_reply_drops_the_gmail_quote_and_answers_reply_to() -> None:
    parsed = email_parse(eml("html_reply"))
    assert parsed.text == "¿Cuándo llega el pedido?"
    assert (parsed.sender, parsed.sender_name) == ("compras@cliente.es", "Elena Compras")
    assert parsed.from_address == "elena@cliente.es"


def test_outlook_original_message_block_is_cut() -> None:
    parsed = email_parse(eml("outlook_reply"))
    assert parsed.text == "Necesito el presupuesto antes del viernes.\n\nUn saludo"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Sí, gracias.\n\nOn Mon, Nov 23, 2026 at 10:00 AM Shop <a@b.es> wrote:\n> hola",
            "Sí, gracias.",
        ),
        ("Vale.\n\nOn Mon, Nov 23, 2026, Shop <a@b.es>\nwrote:\n> hola", "Vale."),
        ("Vale.\n\nEl 23/11/2026, Tienda escribió:\n> hola", "Vale."),
        ("Bien.\n\nDe: Tienda <a@b.es>\nEnviado: lunes\nPara: yo\nAsunto: x\n\nviejo", "Bien."),
        ("Ok\n________________________________\nFrom: x\nSent: y\nTo: z", "Ok"),
        ("Hola\n> citado\nrespuesta intercalada", "Hola\nrespuesta intercalada"),
        ("Hola\n\nSent from my Galaxy", "Hola"),
        ("Hola\n--\nFirma", "Hola"),
        ("De: Madrid a Sevilla, ¿cuánto tarda?", "De: Madrid a Sevilla, ¿cuánto tarda?"),
        ("> solo una cita", "> solo una cita"),  # nothing new: the whole text, not nothing
    ],
)
def test_reply_text_extract(text: str, expected: str) -> None:
    assert reply_text_extract(text) == expected


def test_reply_subject_never_doubles_re() -> None:
    assert reply_subject("RE: Re: Horario") == "Re: Horario"
    assert reply_subject("Horario") == "Re: Horario"
    assert reply_subject("Fwd: Horario") == "Re: Fwd: Horario"
    assert reply_subject("") == "Re:"


@pytest.mark.parametrize(
    ("name", "reason"), [("auto_reply", "auto_submitted"), ("bounce", "bounce")]
)
def test_machine_mail_is_recognised(name: str, reason: str) -> None:
    assert email_parse(eml(name)).machine == reason


def test_a_report_from_a_normal_address_is_still_a_bounce() -> None:
    raw = eml("bounce").replace(b"MAILER-DAEMON@", b"avisos@").replace(b"Return-Path: <>\n", b"")
    assert email_parse(raw).machine == "bounce"
