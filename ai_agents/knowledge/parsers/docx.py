"""DOCX -> sections by heading styles ("Title", "Heading n" and their Spanish names); tables as
rows of cells joined with " | ". The archive's uncompressed size is checked first (zip bombs)."""

from __future__ import annotations

import io
import re
import zipfile

from django.utils.translation import gettext_lazy as _

from ai_agents.knowledge.errors import CorruptDocument, DocumentError
from ai_agents.knowledge.parsers.base import (
    HeadingStack,
    Section,
    normalize_block,
    sections_from_blocks,
)

_MAX_DOCX_UNCOMPRESSED = 300 * 1024 * 1024  # a zip bomb stops here, long before memory does
_DOCX_HEADING = re.compile(r"^(?:heading|t[ií]tulo|encabezado)\s*(\d)$", re.IGNORECASE)


def _docx_heading_level(style_name: str) -> int | None:
    if style_name.lower() == "title":
        return 1
    match = _DOCX_HEADING.match(style_name.strip())
    return int(match.group(1)) if match else None


def parse_docx(data: bytes) -> list[Section]:
    import docx
    from docx.table import Table

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if sum(info.file_size for info in archive.infolist()) > _MAX_DOCX_UNCOMPRESSED:
                raise CorruptDocument(_("El archivo DOCX descomprimido es demasiado grande."))
        document = docx.Document(io.BytesIO(data))
    except DocumentError:
        raise
    except Exception as exc:  # python-docx raises assorted KeyError/ValueError/lxml errors
        raise CorruptDocument(
            _("El archivo DOCX está dañado o no es un documento de Word válido.")
        ) from exc

    headings = HeadingStack()
    blocks: list[tuple[list[str], str]] = []
    body: list[str] = []

    def flush() -> None:
        blocks.append((headings.path, normalize_block("\n\n".join(body))))
        body.clear()

    has_title = False
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            body.append("\n".join(_docx_table_rows(item)))
            continue
        text = item.text.strip()
        style_name = item.style.name if item.style is not None else ""
        level = _docx_heading_level(style_name or "")
        if level is not None and text:
            if style_name.lower() == "title":
                has_title = True
            elif has_title:
                level += 1  # Heading 1 nests under the document Title
            flush()
            headings.push(level, text)
        elif text:
            is_list = "list" in (style_name or "").lower()
            body.append(f"- {text}" if is_list else text)
    flush()
    return sections_from_blocks(blocks)


def _docx_table_rows(table: object) -> list[str]:
    rows = []
    for row in table.rows:  # type: ignore[attr-defined]  # python-docx is untyped
        cells: list[str] = []
        for cell in row.cells:
            value = " ".join(cell.text.split())
            if not cells or cells[-1] != value:  # merged cells repeat their text
                cells.append(value)
        if any(cells):
            rows.append(" | ".join(cells))
    return rows
