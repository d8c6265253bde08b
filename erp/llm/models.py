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
    PLAYGROUND = "playground", _("prueba del agente")
    TRANSCRIPTION = "transcription", _("transcripción de audio")
    IMAGE_DESCRIPTION = "image_description", _("descripción de imagen")
    CHANNEL_MESSAGE = "channel_message", _("mensaje del canal")


# How a conversation's cost is told apart (`erp.llm.selectors.conversation_costs`): every
# operation counts toward its `cost_usd`, grouped under these names.
COST_GROUPS: dict[str, str] = {
    Operation.LLM_REQUEST: "model",
    Operation.EMBEDDING: "model",
    Operation.TOOL_EXECUTION: "model",
    Operation.PLAYGROUND: "model",
    Operation.TRANSCRIPTION: "transcription",
    Operation.IMAGE_DESCRIPTION: "transcription",  # reading the customer's media
    Operation.CHANNEL_MESSAGE: "channel",
}


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
    # What a channel charge is for (e.g. "whatsapp:<delivery id>"): at most one row per key and
    # tenant, so a retried send or a redelivered webhook never bills a message twice. NULL
    # (not "") for the rows without one: the unique constraint skips them.
    charge_key = models.CharField(  # noqa: DJ001
        _("clave del cargo"), max_length=120, null=True, blank=True
    )
    created_at = models.DateTimeField(_("fecha"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("registro de consumo")
        verbose_name_plural = _("registros de consumo")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "created_at"], name="usage_tenant_created"),
            models.Index(fields=["tenant", "agent_id", "created_at"], name="usage_tenant_agent"),
            # The cost of a period's conversations (ai_agents statistics, conversation costs).
            models.Index(
                fields=["tenant", "conversation_id"],
                include=["cost_usd"],  # summed from the index alone
                condition=models.Q(conversation_id__isnull=False),
                name="usage_tenant_conversation",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "charge_key"],
                condition=models.Q(charge_key__isnull=False),
                name="usage_charge_once",
            ),
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


class MessageCategory(models.TextChoices):
    """WhatsApp's pricing categories: "service" is a free-form message inside the 24-hour
    window, the others are the category of the template sent."""

    MARKETING = "marketing", _("marketing")
    UTILITY = "utility", _("utilidad")
    AUTHENTICATION = "authentication", _("autenticación")
    SERVICE = "service", _("servicio")


TEMPLATE_CATEGORIES = frozenset(
    {MessageCategory.MARKETING, MessageCategory.UTILITY, MessageCategory.AUTHENTICATION}
)


class ChannelPrice(models.Model):
    """USD per message a channel charges for a recipient country and category, from
    `valid_from` on (the row with the latest `valid_from` not after the send applies).
    Country "*" is the rest of the world. Global, admin-editable like ModelPrice."""

    channel = models.CharField(_("canal"), max_length=20, default="whatsapp")
    country = models.CharField(
        _("país"), max_length=2, help_text=_("Código ISO de dos letras, o * para el resto.")
    )
    category = models.CharField(_("categoría"), max_length=20, choices=MessageCategory.choices)
    price_usd = models.DecimalField(_("USD por mensaje"), max_digits=10, decimal_places=6)
    valid_from = models.DateField(_("vigente desde"))
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("precio de mensaje del canal")
        verbose_name_plural = _("precios de mensajes del canal")
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "country", "category", "valid_from"],
                name="channelprice_unique",
            ),
        ]
        ordering = ["channel", "country", "category", "-valid_from"]

    def __str__(self) -> str:
        return f"{self.channel} {self.country} {self.category} {self.valid_from}"


class BudgetNotice(TenantOwnedModel):
    """The owner was told the month's spend reached `threshold` % of the budget: one row per
    tenant, month and threshold (the unique constraint makes "once" hold across workers)."""

    month = models.CharField(_("mes"), max_length=7)  # YYYY-MM in the tenant's timezone
    threshold = models.PositiveSmallIntegerField(_("umbral (%)"))
    spent_usd = models.DecimalField(_("gastado (USD)"), max_digits=12, decimal_places=6)
    budget_usd = models.DecimalField(_("presupuesto (USD)"), max_digits=12, decimal_places=2)
    recipients = models.JSONField(_("destinatarios"), default=list, blank=True)
    created_at = models.DateTimeField(_("fecha"), auto_now_add=True)

    class Meta:
        verbose_name = _("aviso de presupuesto")
        verbose_name_plural = _("avisos de presupuesto")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "month", "threshold"], name="budgetnotice_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.month} {self.threshold} %"


def _clear_price_cache() -> None:
    from erp.llm.usage import price_cache_clear

    price_cache_clear()
