"""HTML -> text over real-world-shaped e-mails (fixtures/emails) and hostile input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from erp.html_text import ELLIPSIS, html_to_text

EMAILS = Path(__file__).parent / "fixtures" / "emails"
PAYLOADS = Path(__file__).resolve().parents[2] / "correo" / "tests" / "fixtures" / "zoho"


def email(name: str) -> str:
    return (EMAILS / name).read_text(encoding="utf-8")


def test_newsletter_tables_links_and_pixels():
    assert html_to_text(email("newsletter.html")) == (
        "[Tienda Ejemplo]\n\n"
        "Ofertas de noviembre\n\n"
        "Consulta nuestro catálogo completo en la web.\n\n"
        "Producto | Precio | Descuento\n"
        'Portátil Pro 14" | 1.299 € | -15 %\n'
        "Ratón inalámbrico | 29,90 €\n"
        "Ver catálogo (https://click.tienda.example/track?u=123&l=catalogo)\n"
        "Si no quieres recibir más correos, date de baja (https://tienda.example/baja?id=9). "
        "Escríbenos a hola@tienda.example."
    )


def test_newsletter_drops_preheader_title_and_tracking_pixel():
    text = html_to_text(email("newsletter.html"))
    assert "vista previa" not in text  # class hidden by a top-level <style> rule
    assert "Boletín de noviembre" not in text  # <title>
    assert "pixel" not in text
    # A rule inside @media applies only sometimes: that content stays.
    assert "Consulta nuestro catálogo" in text


def test_quoted_reply_keeps_order_and_lines():
    assert html_to_text(email("quoted_reply.html")) == (
        "Hola Marta,\n\n"
        "Sí, el servidor ya está reiniciado. Te confirmo la factura mañana.\n\n"
        "Un saludo,\n"
        "Jorge\n\n"
        "El lun, 23 nov 2026 a las 9:14, Marta <marta@cliente.example> escribió:\n\n"
        "¿Podéis reiniciar el servidor de staging?\n"
        "Gracias.\n\n"
        "Primer mensaje del hilo, citado dos veces."
    )


def test_outlook_conditional_comments_dropped():
    assert html_to_text(email("outlook.html")) == (
        "Buenos días:\n\n"
        "Adjunto el presupuesto revisado.\n\n"
        "Quedo a la espera.\n\n"
        "Lucía Pérez\n"
        "Departamento de compras"
    )


def test_entities_decoded_exactly_once_and_invisible_characters_removed():
    assert html_to_text(email("entities.html")) == (
        "Precio: 10 € – IVA & envío incluidos © 2026\n\n"
        "Comillas: «hola» “adiós” “numérico” “hex”\n\n"
        "Menor y mayor: <script>alert(1)</script> 5 < 7 > 3\n\n"
        "Doble codificado: &amp; se queda como &amp;\n\n"
        "Acentos: árbol, niño, pingüino, ÁFRICA\n\n"
        "Suaveguion y ceroanchounidos."
    )


def test_scripts_styles_and_non_rendered_elements_dropped():
    text = html_to_text(email("scripts_styles.html"))
    assert text == "Texto visible del mensaje.\n\nFin del mensaje."


def test_hidden_prompt_injection_never_reaches_the_text():
    text = html_to_text(email("injection.html"))
    assert text == (
        "Estimado cliente, su pedido 4471 ha sido enviado.\n\n"
        "Botón visible en fondo oscuro\n\n"
        "Gracias por su compra."
    )
    assert "Ignore previous instructions" not in text
    assert "INYECCION" not in text


def test_hostile_zoho_content_payload():
    body = json.loads((PAYLOADS / "message_content.json").read_text())["data"]["content"]
    text = html_to_text(body)
    for secret in (
        "should never appear",
        "admin mode",
        "approve payment",
        "hidden by class",
        "hidden attribute",
        "ignore previous instructions",
        "cdata text",
        "Invoice",  # <title>
        "pixel.gif",
        "\u200b",
        "\U000e0049",
    ):
        assert secret not in text
    assert "Please find the invoice for order #10423 attached — total €1,250.00" in text
    assert "(<due in 30 days>)" in text
    assert "Item | Qty\nWidget | 5" in text
    # A deceptive link shows where it really goes.
    assert "https://www.acme.example/pay (https://evil.example/login)" in text


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<ul><li>uno</li><li>dos</li></ul>", "- uno\n- dos"),
        ("<ol><li>a<ul><li>b</li></ul></li></ol>", "- a\n- b"),
        ("uno<br>dos<br><br><br><br>tres", "uno\ndos\n\ntres"),
        ("<div>a</div><div>b</div><p>c</p>", "a\nb\n\nc"),
        ("<p>  muchos    espacios\n\t y\u00a0tab </p>", "muchos espacios y tab"),
        ('<a href="mailto:ana@x.example">ana@x.example</a>', "ana@x.example"),
        (
            '<a href="mailto:ana@x.example?subject=Hola">Escríbenos</a>',
            "Escríbenos (ana@x.example)",
        ),
        ('<a href="https://x.example/">x.example</a>', "x.example"),
        ('<a href="https://x.example/a">https://x.example/a</a>', "https://x.example/a"),
        ('<a href="javascript:alert(1)">pulsa</a>', "pulsa"),
        ('<a href="https://x.example"><img src="a.png"></a>', ""),
        ('<img src="a.png" alt="Logo de Acme">', "[Logo de Acme]"),
        ('<img src="p.gif" alt="track" width="1" height="1">', ""),
        ("<table><tr><td>a</td><td></td><td>b</td></tr></table>", "a | b"),
        ("<p>antes</p><hr><p>después</p>", "antes\n\n---\n\ndespués"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_structure_rules(html: str, expected: str):
    assert html_to_text(html) == expected


@pytest.mark.parametrize(
    "html",
    [
        "<div><p>sin cerrar <b>negrita <i>cursiva",
        "<<<>>><p>a</p></div></div></table>",
        "<!-- comentario sin cerrar <p>texto",
        "<!DOCTYPE x [ <!ENTITY a 'b'> ]><p>&a;</p>",
        "<p>\x00nulo\x00</p>",
        "<svg><foreignObject><p>x</p></svg>",
        "<![CDATA[" * 1000,
        "<div>" * 20000 + "profundo" + "</div>" * 20000,
        '<a href="' + "x" * 100000,
        "\udcff<p>sustituto</p>",
    ],
)
def test_malformed_html_never_raises(html: str):
    assert isinstance(html_to_text(html), str)


def test_deep_nesting_keeps_the_text():
    html = "<div>" * 20000 + "profundo" + "</div>" * 20000
    assert html_to_text(html) == "profundo"


def test_truncated_on_a_word_boundary_with_a_marker():
    html = "<p>" + " ".join(f"palabra{i}" for i in range(2000)) + "</p>"
    text = html_to_text(html, limit=4000)
    assert len(text) <= 4000
    assert text.endswith(ELLIPSIS)
    last_word = text.removesuffix(ELLIPSIS).rsplit(" ", 1)[-1]
    assert last_word.startswith("palabra") and last_word[7:].isdigit()
    assert html_to_text("<p>corto</p>", limit=4000) == "corto"


def test_exact_limit_is_not_truncated():
    assert html_to_text("<p>" + "a" * 4000 + "</p>") == "a" * 4000
    cut = html_to_text("<p>" + "a" * 4001 + "</p>")
    assert len(cut) == 4000 and cut.endswith(ELLIPSIS)


def test_five_megabyte_message_is_converted_and_bounded():
    row = "<tr><td style='padding:4px'>Línea de pedido {i}</td><td>12,50&nbsp;&euro;</td></tr>"
    html = "<html><body><table>" + "".join(row.format(i=i) for i in range(60000))
    html = html[: 5 * 1024 * 1024] + "</table></body></html>"
    text = html_to_text(html)
    assert text.startswith("Línea de pedido 0 | 12,50 €\nLínea de pedido 1 | 12,50 €")
    assert len(text) <= 4000  # speed is measured by bench/html_to_text.py, not here


@pytest.mark.parametrize(
    "html",
    [
        "<div>" * 100000 + "Hola, ¿abrís el sábado?" + "</div>" * 100000,
        "<ul><li>" * 100000 + "Hola, ¿abrís el sábado?",
        "</div>" * 100000 + "<div>" * 100000 + "Hola, ¿abrís el sábado?",
    ],
    ids=["nested-divs", "nested-lists", "stray-closes-first"],
)
def test_absurd_nesting_is_read_in_linear_time(html: str):
    # The parser's cost grows with the square of the nesting depth (20,000 deep ~ 2 s, 100,000
    # deep ~ 100 s of CPU): past a depth no mail has, the text is read by a linear tag strip.
    started = time.perf_counter()
    text = html_to_text(html)
    elapsed = time.perf_counter() - started

    assert text == "Hola, ¿abrís el sábado?"
    assert elapsed < 1.5


def test_unclosed_style_tags_and_lone_brackets_are_stripped_in_linear_time():
    html = "<div>" * 5000 + "<p>visible</p>" + "<style>" * 50000 + "<" * 200000
    started = time.perf_counter()
    text = html_to_text(html)
    elapsed = time.perf_counter() - started

    assert text == "visible"
    assert elapsed < 1.5


def test_the_walk_stops_after_max_nodes_of_empty_markup():
    # Little text in much markup: the walk would visit every node (5 MB of empty divs ~ 1 s of
    # Python), so it stops after MAX_NODES nodes; a reader's text comes long before in real mail.
    block = "<div>" * 50 + "</div>" * 50
    html = "<p>Hola</p>" + block * (5 * 1024 * 1024 // len(block)) + "<p>final</p>"
    started = time.perf_counter()
    text = html_to_text(html)
    elapsed = time.perf_counter() - started

    assert text == "Hola"
    assert elapsed < 3
