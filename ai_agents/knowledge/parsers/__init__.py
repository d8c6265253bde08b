"""Bytes of an uploaded document -> plain text split into heading-aware sections.

Conventions the rest of the knowledge pipeline relies on:
- `Section.heading_path` lists the headings above the text, outermost first (Markdown `#`, HTML
  h1-h6, DOCX "Title"/"Heading n"); text before the first heading has an empty path. PDFs give one
  section per page: its path is the bookmark (outline) path covering the page when the PDF has
  bookmarks, else ["Página N"].
- `Section.text` never contains its own heading line; paragraphs are separated by a blank line,
  lines (list items, table rows) by a single newline; table cells are joined with " | ".
- Sections with no text are dropped; a document with no text at all raises `EmptyDocument`.
- Pure function of the input: no network, no files, no database.
- Bounded (`ParseBudget`): pages, decoded PDF page content (a stream shared by many pages counts
  once per page that draws it), seconds and characters of text. Over a budget the document is
  refused with `DocumentTooComplex` and a readable reason. `checkpoint` (optional) is called
  between pages and sections, so the caller can stop the work (a deleted document).
"""

from __future__ import annotations

from collections.abc import Callable

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
    ParsedDocument,
    Section,
    full_text,
    normalize_block,
    sections_from_blocks,
)
from ai_agents.knowledge.parsers.detect import (
    MIME_DOCX,
    MIME_HTML,
    MIME_MARKDOWN,
    MIME_PDF,
    decode_text,
    detect,
)
from ai_agents.knowledge.parsers.docx import parse_docx
from ai_agents.knowledge.parsers.html import parse_html_sections
from ai_agents.knowledge.parsers.markdown import parse_markdown
from ai_agents.knowledge.parsers.pdf import parse_pdf
from erp.storable import storable_text

__all__ = [
    "CorruptDocument",
    "DocumentError",
    "DocumentTooComplex",
    "EmptyDocument",
    "ParseBudget",
    "ParsedDocument",
    "Section",
    "UnsupportedDocument",
    "parse_document",
]


def parse_document(
    data: bytes,
    *,
    filename: str,
    mime_type: str | None,
    budget: ParseBudget | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> ParsedDocument:
    """Detect the type (magic bytes, then mime type, then extension) and extract sections,
    within `budget` (default `ParseBudget()`)."""
    if not data or not data.strip():
        raise EmptyDocument()
    meter = Meter(budget or ParseBudget(), checkpoint)
    kind = detect(data, filename=filename, mime_type=mime_type)
    if kind == MIME_PDF:
        sections = parse_pdf(data, meter)
    elif kind == MIME_DOCX:
        sections = parse_docx(data)
    else:
        text = decode_text(data)
        if kind != MIME_HTML:  # refused before parsing (HTML's markup is not its text)
            meter.check_text(len(text.strip()))
        if kind == MIME_HTML:
            sections = parse_html_sections(text)
        elif kind == MIME_MARKDOWN:
            sections = parse_markdown(text)
        else:
            sections = sections_from_blocks([([], normalize_block(text))])
    meter.tick()
    if kind != MIME_PDF:  # a PDF's text was counted page by page
        meter.add_text(sum(len(section.text) for section in sections))
    if not sections:
        raise EmptyDocument()
    # A PDF's text layer or a UTF-16 file may hold U+0000 (or a lone surrogate), which
    # PostgreSQL refuses in a chunk: the document would fail instead of being searchable.
    sections = [
        Section(heading_path=[storable_text(h) for h in s.heading_path], text=storable_text(s.text))
        for s in sections
    ]
    return ParsedDocument(text=full_text(sections), sections=sections, mime_type=kind)
