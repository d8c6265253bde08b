"""Which format an upload is: magic bytes, then the declared mime type, then the extension; and
how its bytes decode to text. Formats people upload by mistake are refused by name."""

from __future__ import annotations

import io
import zipfile

from django.utils.translation import gettext_lazy as _

from ai_agents.knowledge.errors import CorruptDocument, UnsupportedDocument
from ai_agents.knowledge.parsers.base import MIME_TEXT

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


def detect(data: bytes, *, filename: str, mime_type: str | None) -> str:
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
