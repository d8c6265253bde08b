"""The usage ledger (table `usage_logs`) and the price table it is costed with.

Agent, conversation and message are plain UUID columns, not foreign keys: `erp` never
imports the apps, and operations outside an agent (correo) leave them empty.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from erp.tenancy.models import TenantOwnedModel


class Operation(models.TextChoices):
    LLM_REQUEST = "llm_request", _("petición al modelo")
    EMBEDDING = "embedding", _("embeddings")
    TOOL_EXECUTION = "tool_execution", _("ejecución de herramienta")
    TRANSCRIPTION = "transcription", _("transcripción de audio")
    IMAGE_DESCRIPTION = "image_description", _("descripción de imagen")


class UsageLog(TenantOwnedModel):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent_id = models.UUIDField(_("agente"), null=True, blank=True)
    conversation_id = models.UUIDField(_("conversación"), null=True, blank=True)
    message_id = models.UUIDField(_("mensaje"), null=True, blank=True)
    operation = models.CharField(_("operación"), max_length=50, choices=Operation.choices)
    provider = models.CharField(_("proveedor"), max_length=50, blank=True)
    model = models.CharField(_("modelo"), max_length=100, blank=True)
    input_tokens = models.IntegerField(_("tokens de entrada"), default=0)
    output_tokens = models.IntegerField(_("tokens de salida"), default=0)
    total_tokens = models.IntegerField(_("tokens totales"), default=0)
    cost_usd = models.DecimalField(
        _("costo (USD)"), max_digits=10, decimal_places=6, default=Decimal("0")
    )
    latency_ms = models.IntegerField(_("latencia (ms)"), null=True, blank=True)
    success = models.BooleanField(_("éxito"), default=True)
    error_message = models.TextField(_("error"), blank=True)
    created_at = models.DateTimeField(_("fecha"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("registro de consumo")
        verbose_name_plural = _("registros de consumo")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "created_at"], name="usage_tenant_created"),
            models.Index(fields=["tenant", "agent_id", "created_at"], name="usage_tenant_agent"),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.provider}/{self.model} {self.cost_usd} USD"


class ModelPrice(models.Model):
    """USD per million tokens for a provider/model. Global (not per tenant), admin-editable."""

    provider = models.CharField(_("proveedor"), max_length=50)
    model = models.CharField(_("modelo"), max_length=100)
    input_per_million_usd = models.DecimalField(
        _("USD por millón de tokens de entrada"), max_digits=10, decimal_places=4
    )
    output_per_million_usd = models.DecimalField(
        _("USD por millón de tokens de salida"), max_digits=10, decimal_places=4
    )
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("precio de modelo")
        verbose_name_plural = _("precios de modelos")
        constraints = [
            models.UniqueConstraint(fields=["provider", "model"], name="modelprice_unique"),
        ]
        ordering = ["provider", "model"]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"

    # The gateway caches the price table per process (erp.llm.usage); a write here must reach
    # this process at once, other processes within PRICE_CACHE_SECONDS.
    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        _clear_price_cache()

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        result = super().delete(*args, **kwargs)
        _clear_price_cache()
        return result


def _clear_price_cache() -> None:
    from erp.llm.usage import price_cache_clear

    price_cache_clear()
