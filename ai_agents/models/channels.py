"""Channels: where an agent meets customers (WhatsApp, e-mail, web chat), the delivery record of
what we sent there, and each tenant's handoff settings."""

from __future__ import annotations

import secrets
import uuid

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from erp.crypto import EncryptedTextField
from erp.tenancy.models import TenantOwnedModel


def new_channel_token() -> str:
    """URL-safe and unguessable: the e-mail webhook path and the web chat public key."""
    return secrets.token_urlsafe(24)


class ChannelBinding(TenantOwnedModel):
    class Type(models.TextChoices):
        WHATSAPP = "whatsapp", _("WhatsApp")
        EMAIL = "email", _("correo electrónico")
        WEBCHAT = "webchat", _("chat web")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(
        "ai_agents.Agent",
        on_delete=models.CASCADE,
        related_name="channels",
        verbose_name=_("agente"),
    )
    type = models.CharField(_("tipo"), max_length=20, choices=Type.choices)
    name = models.CharField(_("nombre"), max_length=200, blank=True)
    # WhatsApp: inbound webhooks are routed by the business phone number id (before any tenant
    # is known, so it is unique across the platform).
    phone_number_id = models.CharField(_("id del número (WhatsApp)"), max_length=64, blank=True)
    access_token = EncryptedTextField(_("token de acceso (cifrado)"), blank=True)
    # WhatsApp Business Account id: where the binding's message templates are listed.
    waba_id = models.CharField(_("id de la cuenta de WhatsApp Business"), max_length=64, blank=True)
    whatsapp_template = models.JSONField(
        _("plantilla fuera de la ventana de 24 h"),
        default=dict,
        blank=True,
        help_text=_('Plantilla aprobada, p. ej. {"name": "seguimiento", "language": "es"}.'),
    )
    # E-mail: the address replies come from (and whose own messages are ignored).
    address = models.EmailField(_("dirección"), blank=True)
    # E-mail inbound webhook path token, or the web chat public key.
    token = models.CharField(_("token"), max_length=64, unique=True, default=new_channel_token)
    allowed_origins = models.JSONField(_("orígenes permitidos"), default=list, blank=True)
    # Web chat look (ai_agents/channels/webchat/appearance.py): color, title, greeting,
    # launcher_text, position, avatar_url; a missing key is the default.
    appearance = models.JSONField(_("apariencia del chat web"), default=dict, blank=True)
    is_active = models.BooleanField(_("activo"), default=True)
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("canal")
        verbose_name_plural = _("canales")
        ordering = ["type", "created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(type__in=["whatsapp", "email", "webchat"]), name="chk_channel_type"
            ),
            models.UniqueConstraint(
                fields=["phone_number_id"],
                condition=Q(type="whatsapp"),
                name="channel_unique_whatsapp_number",
            ),
        ]

    def __str__(self) -> str:
        label = self.phone_number_id or self.address or self.name or str(self.pk)[:8]
        return f"{self.get_type_display()} · {label}"


class Delivery(TenantOwnedModel):
    """One message (or one part of a long one) handed to a channel, and what the channel says
    happened to it. WhatsApp status webhooks find it by `external_id`."""

    class Status(models.TextChoices):
        PENDING = "pending", _("pendiente")
        SENT = "sent", _("enviado")
        DELIVERED = "delivered", _("entregado")
        READ = "read", _("leído")
        FAILED = "failed", _("fallido")
        SUPPRESSED = "suppressed", _("no enviado")

    id = models.BigAutoField(primary_key=True)
    message = models.ForeignKey(
        "ai_agents.Message", on_delete=models.CASCADE, related_name="deliveries"
    )
    channel = models.CharField(_("canal"), max_length=20)
    part = models.PositiveSmallIntegerField(_("parte"), default=0)
    # NULL until the channel gives us an id (and forever on channels that do not).
    external_id = models.CharField(  # noqa: DJ001
        _("id en el canal"), max_length=200, null=True, blank=True
    )
    status = models.CharField(
        _("estado"), max_length=20, choices=Status.choices, default=Status.PENDING
    )
    error_code = models.CharField(_("código de error"), max_length=40, blank=True)
    error_message = models.CharField(_("error"), max_length=500, blank=True)
    attempts = models.PositiveSmallIntegerField(_("intentos"), default=0)
    status_at = models.DateTimeField(_("estado desde"), null=True, blank=True)
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)

    class Meta:
        verbose_name = _("entrega")
        verbose_name_plural = _("entregas")
        ordering = ["message_id", "part"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "external_id"],
                condition=Q(external_id__isnull=False),
                name="delivery_unique_external_id",
            ),
            models.UniqueConstraint(fields=["message", "part"], name="delivery_unique_part"),
        ]

    def __str__(self) -> str:
        return f"{self.channel}:{self.external_id or self.pk} {self.status}"


DEFAULT_TEXT = _("Vacío: el texto por defecto.")


class HandoffSettings(TenantOwnedModel):
    """How a tenant's team hears about escalations and how long a claim lasts."""

    tenant = models.OneToOneField(
        "tenancy.Tenant",
        on_delete=models.CASCADE,
        related_name="handoff_settings",
        verbose_name=_("empresa"),
    )
    notify_emails = models.JSONField(
        _("avisar por correo a"),
        default=list,
        blank=True,
        help_text=_("Vacío: todos los miembros del equipo con correo."),
    )
    webhook_url = models.URLField(_("webhook de aviso"), blank=True, max_length=2000)
    webhook_secret = EncryptedTextField(
        _("secreto del webhook (cifrado)"),
        blank=True,
        help_text=_("Firma HMAC-SHA256 del cuerpo en la cabecera X-Signature-256."),
    )
    claim_lease_minutes = models.PositiveIntegerField(
        _("minutos de reserva sin actividad"),
        default=15,
        validators=[MinValueValidator(1), MaxValueValidator(24 * 60)],
    )
    renotify_minutes = models.PositiveIntegerField(
        _("recordar al equipo cada (minutos)"),
        default=30,
        validators=[MaxValueValidator(24 * 60)],
        help_text=_(
            "Si nadie atiende una conversación escalada, se vuelve a avisar tras estos minutos "
            "(como mucho 3 recordatorios). 0: nunca."
        ),
    )
    # What the customer sees when a person takes over, hands back or closes
    # (ai_agents/services/customer_notice.py). The web chat always shows it; WhatsApp and
    # e-mail get it as a message only when `customer_notices` is on. Empty text: the default,
    # in the customer's language.
    media_retention_days = models.PositiveIntegerField(
        _("días que se guardan audios e imágenes"),
        default=0,
        validators=[MaxValueValidator(365)],
        help_text=_(
            "Notas de voz e imágenes de WhatsApp que el equipo puede abrir en la bandeja. "
            "0: no se guardan (solo la transcripción o la descripción)."
        ),
    )
    customer_notices = models.BooleanField(
        _("avisar al cliente por WhatsApp y correo"),
        default=False,
        help_text=_(
            "Envía un mensaje al cliente cuando una persona atiende, devuelve al asistente o "
            "cierra la conversación (el chat web siempre lo muestra)."
        ),
    )
    rating_request = models.BooleanField(
        _("pedir valoración al cerrar"),
        default=True,
        help_text=_(
            "Al cerrar, el chat web pide una valoración de 1 a 5 (WhatsApp y correo también, "
            "si los avisos al cliente están activados)."
        ),
    )
    notice_claim_es = models.CharField(
        _("aviso al atender (español)"), max_length=300, blank=True, help_text=DEFAULT_TEXT
    )
    notice_claim_en = models.CharField(
        _("aviso al atender (inglés)"), max_length=300, blank=True, help_text=DEFAULT_TEXT
    )
    notice_release_es = models.CharField(
        _("aviso al devolver al asistente (español)"),
        max_length=300,
        blank=True,
        help_text=DEFAULT_TEXT,
    )
    notice_release_en = models.CharField(
        _("aviso al devolver al asistente (inglés)"),
        max_length=300,
        blank=True,
        help_text=DEFAULT_TEXT,
    )
    notice_close_es = models.CharField(
        _("aviso al cerrar (español)"), max_length=300, blank=True, help_text=DEFAULT_TEXT
    )
    notice_close_en = models.CharField(
        _("aviso al cerrar (inglés)"), max_length=300, blank=True, help_text=DEFAULT_TEXT
    )
    whatsapp_followup = models.BooleanField(
        _("seguimiento por plantilla de WhatsApp"),
        default=False,
        help_text=_(
            "Antes de que se cierre la ventana de 24 horas, los agentes con un seguimiento "
            "configurado envían una vez su plantilla si el cliente no respondió."
        ),
    )
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("ajustes de traspaso a humanos")
        verbose_name_plural = _("ajustes de traspaso a humanos")

    def __str__(self) -> str:
        return str(self.tenant)
