"""PDF -> one section per page, named by the bookmark covering it; the page content is
measured before any page is read and the clock is checked while pages are parsed."""

from __future__ import annotations

import io
from typing import Any

from django.utils.translation import gettext_lazy as _

from ai_agents.knowledge.errors import (
    CorruptDocument,
    DocumentError,
    DocumentTooComplex,
    EmptyDocument,
    UnsupportedDocument,
)
from ai_agents.knowledge.parsers.base import (
    Meter,
    ParseBudget,
    Section,
    normalize_block,
    sections_from_blocks,
)


def parse_pdf(data: bytes, meter: Meter) -> list[Section]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    budget = meter.budget
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnsupportedDocument(
                _("El PDF está protegido con contraseña; quite la protección y vuelva a subirlo.")
            )
        pages = len(reader.pages)
        if pages > budget.max_pages:
            raise DocumentTooComplex(
                _("El PDF tiene %(pages)d páginas; el máximo es %(max)d.")
                % {"pages": pages, "max": budget.max_pages}
            )
        _pdf_content_check(reader, budget)  # before any page is read
        outline = _pdf_outline_paths(reader)
        blocks = []
        operators = 0

        def every_operator(*_args: Any) -> None:
            # A page that draws a form (or the same one many times) is parsed as it goes:
            # the clock is read every 1,024 operators.
            nonlocal operators
            operators += 1
            if not operators % 1024:
                meter.tick()

        for number, page in enumerate(reader.pages, start=1):
            meter.tick()
            path = outline.get(number - 1) or [str(_("Página %(n)d") % {"n": number})]
            text = page.extract_text(visitor_operand_before=every_operator) or ""
            meter.add_text(len(text))
            blocks.append((path, text))
    except DocumentError:
        raise
    except (PyPdfError, ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
        raise CorruptDocument(_("El archivo PDF está dañado o no es un PDF válido.")) from exc
    sections = sections_from_blocks([(path, normalize_block(text)) for path, text in blocks])
    if not sections:
        raise EmptyDocument(
            _(
                "El PDF no contiene texto extraíble (¿es una imagen escaneada?). "
                "Súbalo con texto seleccionable."
            )
        )
    return sections


def _pdf_content_check(reader: Any, budget: ParseBudget) -> None:
    """Refuses a PDF whose pages draw more content than the budget, all pages summed."""
    sizes: dict[Any, int] = {}  # decoded size of each content stream, decoded once
    content = 0
    pages = len(reader.pages)
    for number, page in enumerate(reader.pages, start=1):
        content += _pdf_content_bytes(page, sizes)
        if content > budget.max_pdf_content_bytes:
            raise DocumentTooComplex(
                _(
                    "El PDF es demasiado complejo: sus páginas suman más de %(mb)d MB de "
                    "contenido (página %(page)d de %(pages)d). Divídalo o expórtelo de nuevo "
                    "como PDF de texto."
                )
                % {
                    "mb": budget.max_pdf_content_bytes // (1024 * 1024),
                    "page": number,
                    "pages": pages,
                }
            )


def _pdf_content_bytes(page: Any, sizes: dict[Any, int]) -> int:
    """Decoded bytes of the page's content streams; a stream is decoded once (`sizes`) however
    many pages draw it, but counted for each of them (each page parses it again)."""
    from pypdf.generic import ArrayObject, IndirectObject

    if "/Contents" not in page:
        return 0
    raw = page.raw_get("/Contents")
    resolved = raw.get_object()
    items = list(resolved) if isinstance(resolved, ArrayObject) else [raw]
    total = 0
    for item in items:
        key = (item.idnum, item.generation) if isinstance(item, IndirectObject) else id(item)
        if key not in sizes:
            stream = item.get_object()
            sizes[key] = len(stream.get_data()) if hasattr(stream, "get_data") else 0
        total += sizes[key]
    return total


def _pdf_outline_paths(reader: Any) -> dict[int, list[str]]:
    """Page index -> path of the last bookmark starting on or before it (bookmarks are optional)."""
    starts: list[tuple[int, int, list[str]]] = []  # (page, order, path)

    def walk(items: list[Any], parents: list[str]) -> None:
        last: list[str] = parents
        for item in items:
            if isinstance(item, list):
                walk(item, last)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # a broken bookmark must not lose the text
                page = None
            if title and page is not None and page >= 0:
                last = [*parents, title]
                starts.append((page, len(starts), last))

    try:
        walk(reader.outline, [])
    except Exception:
        return {}
    if not starts:
        return {}
    starts.sort()
    paths: dict[int, list[str]] = {}
    current: list[str] = []
    position = 0
    for page in range(len(reader.pages)):
        while position < len(starts) and starts[position][0] <= page:
            current = starts[position][2]
            position += 1
        if current:
            paths[page] = current
    return paths
