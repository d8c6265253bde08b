from __future__ import annotations

import io
import random
import zipfile

import pytest
from django.utils import translation

from ai_agents.knowledge.parsers import (
    CorruptDocument,
    DocumentError,
    EmptyDocument,
    ParsedDocument,
    Section,
    UnsupportedDocument,
    parse_document,
)
from ai_agents.tests.knowledge_samples import docx_bytes, pdf_bytes


def sections(doc: ParsedDocument) -> list[tuple[list[str], str]]:
    return [(s.heading_path, s.text) for s in doc.sections]


# -- plain text and encodings ----------------------------------------------------------------


def test_plain_text_keeps_paragraphs_and_collapses_spaces() -> None:
    doc = parse_document(
        b"Hola   mundo\r\n\r\n\r\nSegundo\tparrafo\nlinea 2\n", filename="a.txt", mime_type=None
    )
    assert doc.mime_type == "text/plain"
    assert sections(doc) == [([], "Hola mundo\n\nSegundo parrafo\nlinea 2")]
    assert doc.text == "Hola mundo\n\nSegundo parrafo\nlinea 2"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("Panadería “La Espiga”".encode(), "Panadería “La Espiga”"),
        ("\ufeffPanadería".encode(), "Panadería"),
        ("Panadería “La Espiga”…".encode("cp1252"), "Panadería “La Espiga”…"),
        (b"Caf\xe9 \x81", "Café \x81"),  # 0x81 is undefined in cp1252: latin-1 fallback
        ("Año nuevo".encode("utf-16"), "Año nuevo"),
    ],
    ids=["utf-8", "utf-8-sig", "cp1252", "latin-1", "utf-16"],
)
def test_text_encodings_are_detected(data: bytes, expected: str) -> None:
    doc = parse_document(data, filename="notas.txt", mime_type="text/plain; charset=whatever")
    assert doc.sections[0].text == expected


# -- Markdown --------------------------------------------------------------------------------

MARKDOWN = b"""Texto antes del titulo.

# Menu

Intro del menu.

## Pan dulce

| Producto | Precio |
|---|:---:|
| Concha | $18 |

- **Cuerno** de [mantequilla](https://example.com/cuerno)
- Oreja

```
# no es un titulo
```

### Temporada ###
Rosca de Reyes.

Pasteles
--------
Por encargo.

---

# Contacto
hola@example.com
"""


def test_markdown_headings_build_paths_and_tables_stay_readable() -> None:
    doc = parse_document(MARKDOWN, filename="menu.md", mime_type=None)
    assert doc.mime_type == "text/markdown"
    assert sections(doc) == [
        ([], "Texto antes del titulo."),
        (["Menu"], "Intro del menu."),
        (
            ["Menu", "Pan dulce"],
            "Producto | Precio\nConcha | $18\n\n"
            "- Cuerno de mantequilla (https://example.com/cuerno)\n- Oreja\n\n"
            "```\n# no es un titulo\n```",
        ),
        (["Menu", "Pan dulce", "Temporada"], "Rosca de Reyes."),
        (["Menu", "Pasteles"], "Por encargo."),
        (["Contacto"], "hola@example.com"),
    ]


def test_markdown_detected_from_mime_type_without_extension() -> None:
    doc = parse_document(b"# Hola\ntexto", filename="upload", mime_type="text/markdown")
    assert sections(doc) == [(["Hola"], "texto")]


# -- HTML ------------------------------------------------------------------------------------

HTML = b"""<!DOCTYPE html>
<html><head><title>Titulo oculto</title><style>p { color: red }</style>
<script>var secreto = "no indexar";</script></head>
<body>
<nav><a href="/">Inicio</a> <a href="/menu">Menu</a></nav>
<h1>Pan &amp; caf&eacute;</h1>
<p>Abrimos a las <b>7:00</b>&nbsp;en punto.</p>
<div style="display: none">texto oculto por estilo</div>
<p hidden>texto oculto por atributo</p>
<span aria-hidden="true">icono</span><p>Visible despu&eacute;s.</p>
<h2>Precios</h2>
<table><tr><th>Producto</th><th>Precio</th></tr><tr><td>Concha</td><td>$18</td></tr></table>
<ul><li>Uno</li><li>Dos</li></ul>
<!-- comentario -->
<script>document.write("tampoco")</script>
<h1>Contacto</h1><p>Calle C&oacute;rdoba 118<br>Roma Norte</p>
</body></html>"""


def test_html_drops_scripts_styles_nav_and_hidden_text() -> None:
    doc = parse_document(HTML, filename="pagina.html", mime_type="text/html")
    assert doc.mime_type == "text/html"
    assert sections(doc) == [
        (["Pan & café"], "Abrimos a las 7:00 en punto.\n\nVisible después."),
        (["Pan & café", "Precios"], "Producto | Precio\nConcha | $18\n\n- Uno\n- Dos"),
        (["Contacto"], "Calle Córdoba 118\nRoma Norte"),
    ]
    for hidden in ("secreto", "oculto", "icono", "Inicio", "comentario", "tampoco", "color"):
        assert hidden not in doc.text


def test_html_is_sniffed_when_type_is_unknown() -> None:
    doc = parse_document(
        b"<html><body><h2>A</h2><p>b</p></body></html>", filename="x", mime_type=None
    )
    assert doc.mime_type == "text/html"
    assert sections(doc) == [(["A"], "b")]


def test_xhtml_with_xml_declaration_and_declared_charset() -> None:
    data = (
        '<?xml version="1.0" encoding="windows-1252"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head>'
        '<meta charset="windows-1252"/></head><body><h1>Menú</h1><p>Café de olla</p></body></html>'
    ).encode("cp1252")
    doc = parse_document(data, filename="menu.xhtml", mime_type="application/xhtml+xml")
    assert sections(doc) == [(["Menú"], "Café de olla")]


@pytest.mark.parametrize(
    ("data", "filename", "expected"),
    [
        (b"# Hola\ntexto", "notas.md", "text/markdown"),
        (b"<html><body><p>hola</p></body></html>", "subida", "text/html"),
        (b"hola", "subida", "text/plain"),
    ],
)
def test_generic_mime_type_falls_back_to_extension_and_sniffing(
    data: bytes, filename: str, expected: str
) -> None:
    doc = parse_document(data, filename=filename, mime_type="application/octet-stream")
    assert doc.mime_type == expected


def test_html_with_only_scripts_is_empty() -> None:
    with pytest.raises(EmptyDocument):
        parse_document(b"<html><script>x()</script></html>", filename="a.html", mime_type=None)


def test_large_html_parses_completely() -> None:
    paragraph = (
        "<p>La panadería abre de lunes a viernes de 7:00 a 21:00 <a href='/h'>ver</a> y "
        "<b>domingos</b> de 8:00 a 15:00 en la colonia Roma Norte.</p>\n"
    )
    block = "<h2>Sección</h2>" + paragraph * 15 + "<ul>" + "<li>Concha $18</li>" * 10 + "</ul>"
    data = ("<html><body>" + block * (5_000_000 // len(block)) + "</body></html>").encode()
    assert len(data) > 4_900_000
    doc = parse_document(data, filename="grande.html", mime_type="text/html")
    assert len(doc.sections) > 1000
    assert doc.sections[-1].heading_path == ["Sección"]
    assert "Concha $18" in doc.sections[-1].text


# -- PDF -------------------------------------------------------------------------------------


def test_pdf_gives_one_section_per_page() -> None:
    data = pdf_bytes(
        [["Horario de atención", "Lunes a viernes 7:00"], [], ["Página con (paréntesis)"]]
    )
    doc = parse_document(data, filename="info.pdf", mime_type="application/pdf")
    assert doc.mime_type == "application/pdf"
    assert [s.heading_path for s in doc.sections] == [["Página 1"], ["Página 3"]]
    assert "Horario de atención" in doc.sections[0].text
    assert "Lunes a viernes 7:00" in doc.sections[0].text
    assert "Página con (paréntesis)" in doc.sections[1].text


def test_pdf_bookmarks_become_heading_paths() -> None:
    from pypdf import PdfReader, PdfWriter

    source = pdf_bytes([["Portada"], ["Lunes a viernes"], ["Domingo"], ["Calle Córdoba"]])
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(source)))
    hours = writer.add_outline_item(title="Horarios", page_number=1)
    writer.add_outline_item(title="Fin de semana", page_number=2, parent=hours)
    writer.add_outline_item(title="Ubicación", page_number=3)
    buffer = io.BytesIO()
    writer.write(buffer)
    doc = parse_document(buffer.getvalue(), filename="guia.pdf", mime_type=None)
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        (["Página 1"], "Portada"),
        (["Horarios"], "Lunes a viernes"),
        (["Horarios", "Fin de semana"], "Domingo"),
        (["Ubicación"], "Calle Córdoba"),
    ]


def test_pdf_detected_by_magic_bytes_despite_wrong_name() -> None:
    doc = parse_document(pdf_bytes([["Hola"]]), filename="archivo.txt", mime_type="text/plain")
    assert doc.mime_type == "application/pdf"


def test_pdf_without_text_is_empty_with_a_reason() -> None:
    with pytest.raises(EmptyDocument) as info:
        parse_document(pdf_bytes([[]]), filename="escaneo.pdf", mime_type=None)
    assert "texto" in str(info.value)


@pytest.mark.parametrize(
    "data",
    [b"esto no es un pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog", b"%PDF-1.7\n" + bytes(200)],
    ids=["no-magic", "truncated", "zeros"],
)
def test_corrupt_pdf(data: bytes) -> None:
    with pytest.raises(CorruptDocument) as info:
        parse_document(data, filename="roto.pdf", mime_type="application/pdf")
    assert "PDF" in str(info.value)


# -- DOCX ------------------------------------------------------------------------------------


def test_docx_headings_tables_and_lists() -> None:
    doc = parse_document(docx_bytes(), filename="info.docx", mime_type=None)
    assert doc.mime_type.endswith("wordprocessingml.document")
    assert sections(doc) == [
        ([], "Bienvenidos a La Espiga."),
        (["Servicios"], "Horneamos pan todos los días."),
        (
            ["Servicios", "Pasteles"],
            "Pedidos con 72 horas de anticipación.\n\n- Tres leches\n\n"
            "Tamaño | Precio\nChico | $480",
        ),
        (["Contacto"], "Calle Córdoba 118."),
    ]


def test_docx_that_is_not_a_zip_is_corrupt() -> None:
    with pytest.raises(CorruptDocument) as info:
        parse_document(b"hola, soy texto", filename="carta.docx", mime_type=None)
    assert "DOCX" in str(info.value)


def test_zip_without_word_document() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("foto.txt", "hola")
    with pytest.raises(CorruptDocument):
        parse_document(buffer.getvalue(), filename="carta.docx", mime_type=None)
    with pytest.raises(UnsupportedDocument):
        parse_document(buffer.getvalue(), filename="fotos.zip", mime_type="application/zip")


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n  "], ids=["empty", "whitespace"])
def test_empty_file(data: bytes) -> None:
    with pytest.raises(EmptyDocument) as info:
        parse_document(data, filename="vacio.txt", mime_type="text/plain")
    assert "vacío" in str(info.value)


def test_binary_garbage_is_unsupported() -> None:
    garbage = random.Random(7).randbytes(4096)
    with pytest.raises(UnsupportedDocument) as info:
        parse_document(garbage, filename="datos.txt", mime_type="text/plain")
    assert "binario" in str(info.value)


def test_image_is_unsupported_and_named() -> None:
    with pytest.raises(UnsupportedDocument) as info:
        parse_document(b"\x89PNG\r\n\x1a\n" + bytes(100), filename="foto.png", mime_type=None)
    assert "PNG" in str(info.value)


def test_unknown_declared_binary_type_is_unsupported() -> None:
    with pytest.raises(UnsupportedDocument):
        parse_document(b"texto", filename="hoja.xlsx", mime_type="application/vnd.ms-excel")


def test_errors_share_a_base_and_have_stable_codes() -> None:
    assert issubclass(EmptyDocument, DocumentError)
    assert {EmptyDocument.code, UnsupportedDocument.code, CorruptDocument.code} == {
        "document_empty",
        "document_unsupported",
        "document_corrupt",
    }
    with translation.override("es"):
        assert str(CorruptDocument()) == (
            "El archivo está dañado o su contenido no corresponde a su tipo."
        )


def test_section_is_a_plain_dataclass() -> None:
    assert Section(heading_path=["A"], text="b") == Section(["A"], "b")
