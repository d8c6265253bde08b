"""Why a document cannot be ingested. `str(error)` is a readable Spanish reason (gettext)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _


class DocumentError(Exception):
    """Base of every parsing error; `code` is stable, `str()` is for people."""

    code = "document_error"
    default_message = _("No se pudo leer el documento.")

    def __init__(self, message: object = None) -> None:
        self.message = message if message is not None else self.default_message
        super().__init__(self.message)

    def __str__(self) -> str:
        return str(self.message)


class EmptyDocument(DocumentError):
    code = "document_empty"
    default_message = _("El documento está vacío: no contiene texto que se pueda indexar.")


class UnsupportedDocument(DocumentError):
    code = "document_unsupported"
    default_message = _(
        "Tipo de archivo no admitido. Formatos aceptados: texto, Markdown, HTML, PDF y DOCX."
    )


class CorruptDocument(DocumentError):
    code = "document_corrupt"
    default_message = _("El archivo está dañado o su contenido no corresponde a su tipo.")


class DocumentTooComplex(DocumentError):
    """Over one of the parser's budgets (pages, content, time, text): refused, never half-read."""

    code = "document_too_complex"
    default_message = _("El documento es demasiado grande o complejo para indexarlo.")
