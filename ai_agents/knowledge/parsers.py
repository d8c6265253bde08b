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

import io
import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_lazy as _

from ai_agents.knowledge.errors import (
    CorruptDocument,
    DocumentError,
    DocumentTooComplex,
    EmptyDocument,
    UnsupportedDocument,
)
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

MIME_TEXT = "text/plain"
MIME_MARKDOWN = "text/markdown"
MIME_HTML = "text/html"
MIME_PDF = "application/pdf"
MIME_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_EXTENSIONS = {
    "txt": MIME_TEXT,
    "text": MIME_TEXT,
    "csv": MIME_TEXT,
    "md": MIME_MARKDOWN,
    "markdown": MIME_MARKDOWN,
    "mdown": MIME_MARKDOWN,
    "htm": MIME_HTML,
    "html": MIME_HTML,
    "xhtml": MIME_HTML,
    "pdf": MIME_PDF,
    "docx": MIME_DOCX,
}
_MIME_ALIASES = {
    "text/plain": MIME_TEXT,
    "text/csv": MIME_TEXT,
    "text/markdown": MIME_MARKDOWN,
    "text/x-markdown": MIME_MARKDOWN,
    "text/html": MIME_HTML,
    "application/xhtml+xml": MIME_HTML,
    "application/pdf": MIME_PDF,
    "application/x-pdf": MIME_PDF,
    MIME_DOCX: MIME_DOCX,
}
_GENERIC_MIMES = frozenset(
    {"application/octet-stream", "binary/octet-stream", "application/unknown"}
)
# Magic bytes of formats people upload by mistake: named in the error so they know what happened.
_KNOWN_BINARIES = (
    (b"\x89PNG", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF8", "GIF"),
    (b"\x1f\x8b", "gzip"),
    (b"\xd0\xcf\x11\xe0", "Office 97-2003 (.doc/.xls)"),
    (b"\x7fELF", "ELF"),
    (b"MZ", "EXE"),
    (b"Rar!", "RAR"),
    (b"7z\xbc\xaf", "7z"),
    (b"{\\rtf", "RTF"),
)
_MAX_DOCX_UNCOMPRESSED = 300 * 1024 * 1024  # a zip bomb stops here, long before memory does


@dataclass(frozen=True)
class ParseBudget:
    """What reading one document may cost. pypdf reads about 1 MB of page content per second
    (less on a busy machine), so 32 MB stays well inside two minutes."""

    max_pages: int = 1000
    max_pdf_content_bytes: int = 32 * 1024 * 1024
    max_seconds: float = 120.0
    max_text_chars: int = 5_000_000  # ~2,500 chunks: about 6 minutes of offline embedding


class _Meter:
    """The budget being spent: `tick()` checks the time (and calls the checkpoint)."""

    def __init__(self, budget: ParseBudget, checkpoint: Callable[[], None] | None) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget.max_seconds
        self.checkpoint = checkpoint
        self.chars = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise DocumentTooComplex(
                _(
                    "El documento tardó demasiado en leerse (más de %(seconds)s s). Divídalo en "
                    "partes más pequeñas."
                )
                % {"seconds": f"{self.budget.max_seconds:g}"}
            )
        if self.checkpoint is not None:
            self.checkpoint()

    def add_text(self, chars: int) -> None:
        self.chars += chars
        self.check_text(self.chars)

    def check_text(self, chars: int) -> None:
        if chars > self.budget.max_text_chars:
            raise DocumentTooComplex(
                _(
                    "El documento tiene más de %(chars)d caracteres de texto. Divídalo en partes "
                    "más pequeñas."
                )
                % {"chars": self.budget.max_text_chars}
            )


@dataclass(frozen=True)
class Section:
    heading_path: list[str]
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    text: str
    sections: list[Section] = field(default_factory=list)
    mime_type: str = MIME_TEXT


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
    meter = _Meter(budget or ParseBudget(), checkpoint)
    kind = _detect(data, filename=filename, mime_type=mime_type)
    if kind == MIME_PDF:
        sections = _parse_pdf(data, meter)
    elif kind == MIME_DOCX:
        sections = _parse_docx(data)
    else:
        text = decode_text(data)
        if kind != MIME_HTML:  # refused before parsing (HTML's markup is not its text)
            meter.check_text(len(text.strip()))
        if kind == MIME_HTML:
            sections = _parse_html(text)
        elif kind == MIME_MARKDOWN:
            sections = _parse_markdown(text)
        else:
            sections = _sections_from_blocks([([], _normalize_block(text))])
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
    return ParsedDocument(text=_full_text(sections), sections=sections, mime_type=kind)


# -- detection -------------------------------------------------------------------------------


def _detect(data: bytes, *, filename: str, mime_type: str | None) -> str:
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    declared_mime = (mime_type or "").split(";", 1)[0].strip().lower()
    if declared_mime in _GENERIC_MIMES:
        declared_mime = ""  # browsers send these for any unknown file: sniff instead
    declared = _MIME_ALIASES.get(declared_mime) or _EXTENSIONS.get(ext)
    head = data[:1024]
    if b"%PDF-" in head:
        return MIME_PDF
    if data.startswith(b"PK\x03\x04"):
        if _is_docx(data):
            return MIME_DOCX
        if declared == MIME_DOCX:
            raise CorruptDocument(
                _("El archivo DOCX está dañado: no contiene un documento de Word.")
            )
        raise UnsupportedDocument(
            _(
                "Tipo de archivo no admitido (archivo ZIP). Formatos aceptados: texto, Markdown, "
                "HTML, PDF y DOCX."
            )
        )
    if declared == MIME_PDF or ext == "pdf":
        raise CorruptDocument(_("El archivo PDF está dañado o no es un PDF válido."))
    if declared == MIME_DOCX or ext == "docx":
        raise CorruptDocument(_("El archivo DOCX está dañado o no es un documento de Word válido."))
    for magic, name in _KNOWN_BINARIES:
        if data.startswith(magic):
            raise UnsupportedDocument(
                _(
                    "Tipo de archivo no admitido (%(kind)s). Formatos aceptados: texto, Markdown, "
                    "HTML, PDF y DOCX."
                )
                % {"kind": name}
            )
    if _looks_binary(data):
        raise UnsupportedDocument(
            _(
                "El archivo no contiene texto legible (parece binario). Formatos aceptados: texto, "
                "Markdown, HTML, PDF y DOCX."
            )
        )
    if declared_mime and declared is None and not declared_mime.startswith("text/"):
        raise UnsupportedDocument(
            _(
                "Tipo de archivo no admitido (%(kind)s). Formatos aceptados: texto, Markdown, "
                "HTML, PDF y DOCX."
            )
            % {"kind": declared_mime}
        )
    if declared in (MIME_HTML, MIME_MARKDOWN, MIME_TEXT):
        return declared
    sniff = data[:512].lstrip().lower()
    if sniff.startswith((b"<!doctype html", b"<html")) or b"<body" in sniff:
        return MIME_HTML
    return MIME_TEXT


def _is_docx(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 with BOM: NUL bytes are expected
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
    return control > len(sample) * 0.05


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), UTF-16 with BOM, else cp1252 (Windows Spanish), else latin-1."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# -- shared text helpers ---------------------------------------------------------------------

_SPACES = re.compile(r"[ \t\f\v\u00a0\u200b]+")
_LINE_EDGES = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{2,}")


def _normalize_block(text: str) -> str:
    """Collapse spaces inside lines, keep single newlines, at most one blank line in a row."""
    text = _SPACES.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _LINE_EDGES.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _sections_from_blocks(blocks: list[tuple[list[str], str]]) -> list[Section]:
    return [Section(heading_path=list(path), text=text) for path, text in blocks if text.strip()]


def _full_text(sections: list[Section]) -> str:
    parts: list[str] = []
    previous: list[str] = []
    for section in sections:
        if section.heading_path and section.heading_path != previous:
            parts.append(" > ".join(section.heading_path))
        parts.append(section.text)
        previous = section.heading_path
    return "\n\n".join(parts)


class _HeadingStack:
    """Heading path bookkeeping: a heading of level n replaces levels >= n."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def push(self, level: int, title: str) -> None:
        if not title:
            return
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, title))

    @property
    def path(self) -> list[str]:
        return [title for _, title in self._stack]


# -- Markdown --------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-{2,})[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:<)?([^)\s>]+)(?:>)?(?:\s+\"[^\"]*\")?\)")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _markdown_inline(line: str) -> str:
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m[1]} ({m[2]})", line)
    line = _EMPHASIS.sub(r"\2", line)
    return _CODE_SPAN.sub(r"\1", line)


def _markdown_table_row(line: str) -> str:
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return " | ".join(cells)


def _parse_markdown(text: str) -> list[Section]:
    text = _HTML_COMMENT.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    headings = _HeadingStack()
    blocks: list[tuple[list[str], str]] = []
    body: list[str] = []
    fence: str | None = None

    def flush() -> None:
        blocks.append((headings.path, _normalize_block("\n".join(body))))
        body.clear()

    for index, line in enumerate(lines):
        if fence is not None:
            body.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        fence_match = _FENCE.match(line)
        if fence_match:
            fence = fence_match.group(1)
            body.append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            flush()
            headings.push(len(atx.group(1)), _markdown_inline((atx.group(2) or "").strip()))
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        setext = _SETEXT.match(following)
        previous_blank = index == 0 or not lines[index - 1].strip()
        if setext and line.strip() and previous_blank and not line.lstrip().startswith(("-", "*")):
            flush()
            headings.push(
                1 if setext.group(1).startswith("=") else 2, _markdown_inline(line.strip())
            )
            lines[index + 1] = ""  # the underline is consumed
            continue
        if (
            _TABLE_SEPARATOR.match(line)
            and "-" in line
            and ("|" in line or (body and "|" in body[-1]))
        ):
            continue
        if _THEMATIC_BREAK.match(line):
            body.append("")
            continue
        if line.lstrip().startswith("|"):
            body.append(_markdown_table_row(_markdown_inline(line)))
            continue
        body.append(_markdown_inline(line))
    flush()
    return _sections_from_blocks(blocks)


# -- HTML ------------------------------------------------------------------------------------

_SKIP_TAGS = frozenset(
    {
        "script",
        "style",
        "head",
        "nav",
        "noscript",
        "template",
        "svg",
        "iframe",
        "object",
        "embed",
        "canvas",
        "select",
        "button",
        "audio",
        "video",
        "map",
    }
)
_PARAGRAPH_TAGS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "aside",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "table",
        "form",
        "fieldset",
        "figure",
        "figcaption",
        "address",
        "hr",
        "details",
        "summary",
        "caption",
    }
)
_LINE_TAGS = frozenset({"br", "li", "tr", "dt", "dd", "thead", "tbody", "tfoot"})
_HEADING_TAGS = {f"h{n}": n for n in range(1, 7)}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def _drop_keep_tail(element: Any) -> None:
    """Remove an element and its subtree but keep the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail or ""
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _html_root(text: str) -> Any:
    from lxml import etree

    parser = etree.HTMLParser(
        encoding="utf-8",
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        recover=True,
        huge_tree=True,
    )
    try:
        # Bytes, not str: lxml rejects str input that carries an XML encoding declaration (XHTML).
        root = etree.fromstring(text.encode("utf-8"), parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise CorruptDocument(_("El archivo HTML no se pudo interpretar.")) from exc
    if root is None:
        raise EmptyDocument()
    etree.strip_elements(root, *_SKIP_TAGS, with_tail=False)  # C speed, keeps their tails
    hidden = root.xpath("//*[@hidden or @style or @aria-hidden or (self::input and @type)]")
    for element in hidden:  # type: ignore[union-attr]  # a node-set XPath gives a list
        if _is_hidden(element):
            _drop_keep_tail(element)
    return root


def _is_hidden(element: Any) -> bool:
    get = element.get
    if get("hidden") is not None or (get("aria-hidden") or "").lower() == "true":
        return True
    if element.tag == "input" and (get("type") or "").lower() == "hidden":
        return True
    return bool(_HIDDEN_STYLE.search(get("style") or ""))


_BREAKS = re.compile(r"[\x01\x02](?:[ \t\n\r\f\v\u00a0\x01\x02]*[\x01\x02])?")


def _breaks_to_newlines(match: re.Match[str]) -> str:
    return "\n\n" if "\x02" in match.group(0) else "\n"


def _parse_html(text: str) -> list[Section]:
    from lxml import etree

    root = _html_root(text)
    headings = _HeadingStack()
    blocks: list[tuple[list[str], str]] = []
    out: list[str] = []
    heading_text: list[str] | None = None  # collects text while inside h1-h6
    heading_level = 0
    rows: list[int] = []  # cells seen in each open <tr>
    pre_depth = 0

    def emit(chunk: str | None) -> None:
        if not chunk:
            return
        if heading_text is not None:
            heading_text.append(chunk)
        elif pre_depth:
            out.append(chunk.replace("\n", "\x01"))
        else:
            out.append(chunk.replace("\n", " "))

    def flush() -> None:
        raw = _BREAKS.sub(_breaks_to_newlines, "".join(out))
        blocks.append((headings.path, _normalize_block(raw)))
        out.clear()

    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if tag in _HEADING_TAGS and heading_text is None:
                flush()
                heading_text = []
                heading_level = _HEADING_TAGS[tag]
            elif tag in _PARAGRAPH_TAGS:
                out.append("\x02")
                if tag == "pre":
                    pre_depth += 1
            elif tag in _LINE_TAGS:
                out.append("\x01")
                if tag == "tr":
                    rows.append(0)
                elif tag == "li":
                    out.append("- ")
            elif tag in ("td", "th") and rows:
                if rows[-1]:
                    out.append(" | ")
                rows[-1] += 1
            emit(element.text)
        else:
            if tag in _HEADING_TAGS:
                if heading_text is not None and _HEADING_TAGS[tag] == heading_level:
                    title = " ".join("".join(heading_text).split())
                    heading_text = None
                    if title:
                        headings.push(heading_level, title)
            elif tag in _PARAGRAPH_TAGS:
                out.append("\x02")
                if tag == "pre":
                    pre_depth -= 1
            elif tag in _LINE_TAGS:
                out.append("\x01")
                if tag == "tr" and rows:
                    rows.pop()
            emit(element.tail)
    flush()
    return _sections_from_blocks(blocks)


# -- PDF -------------------------------------------------------------------------------------


def _parse_pdf(data: bytes, meter: _Meter) -> list[Section]:
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
    sections = _sections_from_blocks([(path, _normalize_block(text)) for path, text in blocks])
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


# -- DOCX ------------------------------------------------------------------------------------

_DOCX_HEADING = re.compile(r"^(?:heading|t[ií]tulo|encabezado)\s*(\d)$", re.IGNORECASE)


def _docx_heading_level(style_name: str) -> int | None:
    if style_name.lower() == "title":
        return 1
    match = _DOCX_HEADING.match(style_name.strip())
    return int(match.group(1)) if match else None


def _parse_docx(data: bytes) -> list[Section]:
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

    headings = _HeadingStack()
    blocks: list[tuple[list[str], str]] = []
    body: list[str] = []

    def flush() -> None:
        blocks.append((headings.path, _normalize_block("\n\n".join(body))))
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
    return _sections_from_blocks(blocks)


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
