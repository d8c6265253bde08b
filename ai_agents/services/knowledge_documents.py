"""Writes for a knowledge base's documents: add (file bytes, pasted text, a URL), re-index,
delete. A new document is stored `pending` and its ingestion queued on the bulk queue after
commit (`knowledge.document_ingest` does the work); the same content already in the base is
returned as is, not embedded again.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from ai_agents.models import Document, KnowledgeBase
from ai_agents.services.knowledge import (
    DocumentTooLarge,
    InvalidDocument,
    KnowledgeError,
    document_ingest,
)
from erp.celery import enqueue
from erp.db import connection_release
from erp.http.client import HttpClient
from erp.http.errors import (
    HttpBlockedDestination,
    HttpError,
    HttpResponseTooLarge,
    HttpStatusError,
    HttpTimeout,
    HttpTooManyRedirects,
)
from erp.tenancy.scoping import acts_for

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocumentAdded:
    document: Document
    created: bool  # False: the same content was already in this knowledge base


def guess_mime_type(filename: str, declared: str | None) -> str | None:
    if declared and declared not in ("application/octet-stream", ""):
        return declared
    guessed, _encoding = mimetypes.guess_type(filename)
    if guessed is None and filename.lower().endswith((".md", ".markdown")):
        return "text/markdown"
    return guessed or declared


@acts_for("kb")
def document_add(
    *,
    kb: KnowledgeBase,
    data: bytes,
    filename: str = "",
    mime_type: str | None = None,
    title: str = "",
    source: str = Document.Source.UPLOAD,
    enqueue: bool = True,
) -> DocumentAdded:
    """Stores the document as `pending` and queues its ingestion (after commit). The same
    content already in this knowledge base is returned as is, not embedded again."""
    if len(data) > settings.UPLOAD_MAX_BYTES:
        raise DocumentTooLarge(
            _("El archivo supera el tamaño máximo de %(mb)s MB.")
            % {"mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024)}
        )
    if not data.strip():
        raise InvalidDocument(_("El documento está vacío."))
    content_hash = hashlib.sha256(data).hexdigest()
    existing = (
        Document.objects.for_tenant(kb.tenant)
        .filter(knowledge_base=kb, content_hash=content_hash)
        .defer("data")
        .first()
    )
    if existing is not None:
        if existing.status == Document.Status.FAILED and enqueue:
            document_reindex(document=existing)
        return DocumentAdded(existing, created=False)
    document = Document(
        tenant=kb.tenant,
        knowledge_base=kb,
        title=(title or filename or _("Documento sin título"))[:300],
        source=source,
        original_filename=filename[:255],
        mime_type=(guess_mime_type(filename, mime_type) or "")[:120],
        content_hash=content_hash,
        data=data,
    )
    try:
        with transaction.atomic():
            document.save()
    except IntegrityError:  # a concurrent upload of the same content won
        other = Document.objects.for_tenant(kb.tenant).get(
            knowledge_base=kb, content_hash=content_hash
        )
        return DocumentAdded(other, created=False)
    if enqueue:
        _enqueue(document)
    return DocumentAdded(document, created=True)


@acts_for("kb")
def document_add_text(*, kb: KnowledgeBase, title: str, text: str) -> DocumentAdded:
    """A pasted text (API, admin): stored as Markdown, which reads plain text as paragraphs and
    keeps any headings."""
    return document_add(
        kb=kb,
        data=text.encode(),
        mime_type="text/markdown",
        title=title,
        source=Document.Source.TEXT,
    )


URL_FETCH_TIMEOUT_SECONDS = 20.0


class DocumentFetchFailed(KnowledgeError):
    """The URL of a document could not be fetched (refused, unreachable, error status)."""


@acts_for("kb")
def document_add_from_url(*, kb: KnowledgeBase, url: str, title: str = "") -> DocumentAdded:
    """Fetches a public web page or file (SSRF guard on, redirects re-checked, size capped)
    and adds it like an upload, with source `url`."""
    client = HttpClient(guard=True, timeout=URL_FETCH_TIMEOUT_SECONDS)
    client.follow_redirects = True
    connection_release()  # the site may take up to the timeout: no connection held meanwhile
    try:
        response = client.get(url, max_bytes=settings.UPLOAD_MAX_BYTES)
    except HttpResponseTooLarge:
        raise DocumentTooLarge(
            _("El archivo supera el tamaño máximo de %(mb)s MB.")
            % {"mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024)}
        ) from None
    except HttpBlockedDestination:
        raise InvalidDocument(
            _("La dirección no está permitida: solo se admiten direcciones públicas.")
        ) from None
    except HttpError as exc:
        raise DocumentFetchFailed(_fetch_failure(exc)) from None
    path = urlsplit(url).path
    filename = (path.rsplit("/", 1)[-1] or urlsplit(url).hostname or "")[:255]
    mime_type = (response.headers.get("Content-Type") or "").split(";")[0].strip() or None
    added = document_add(
        kb=kb,
        data=response.content,
        filename=filename,
        mime_type=mime_type,
        title=title or url,  # the page's address stays visible as its title
        source=Document.Source.URL,
        enqueue=False,
    )
    if added.created:
        _enqueue(added.document)
    return added


def _enqueue(document: Document) -> None:
    document_id = str(document.pk)
    transaction.on_commit(lambda: enqueue("ai_agents.bulk_ingest_document", document_id))


@acts_for("document")
def document_reindex(*, document: Document) -> Document:
    Document.objects.for_tenant(document.tenant_id).filter(pk=document.pk).update(
        status=Document.Status.PENDING, progress=0, error=""
    )
    document.status, document.progress, document.error = Document.Status.PENDING, 0, ""
    _enqueue(document)
    return document


@acts_for("document")
def document_delete(*, document: Document) -> None:
    document.delete()


@acts_for("kb")
def document_add_and_ingest(
    *,
    kb: KnowledgeBase,
    data: bytes,
    filename: str,
    on_progress: Callable[[int], None] | None = None,
) -> DocumentAdded:
    """In-process ingestion (commands, demo): skips content already `ready` in this base."""
    added = document_add(kb=kb, data=data, filename=filename, title=filename, enqueue=False)
    document = added.document
    if document.status != Document.Status.READY:
        document = Document.objects.for_tenant(kb.tenant_id).get(pk=document.pk)
        document_ingest(document=document, on_progress=on_progress)
    return DocumentAdded(document, added.created)


def _fetch_failure(exc: HttpError) -> str:
    """Why the address could not be downloaded, in words (the error's type goes to the log)."""
    logger.info("kb.url_fetch_failed", extra={"error": type(exc).__name__, "url": exc.url})
    if isinstance(exc, HttpTimeout):
        return _("No se pudo descargar la dirección: el sitio no respondió a tiempo.")
    if isinstance(exc, HttpStatusError):
        return _(
            "No se pudo descargar la dirección: el sitio respondió con el error HTTP %(status)s."
        ) % {"status": exc.status}
    if isinstance(exc, HttpTooManyRedirects):
        return _("No se pudo descargar la dirección: redirige demasiadas veces.")
    return _("No se pudo descargar la dirección: no se pudo conectar con el sitio.")
