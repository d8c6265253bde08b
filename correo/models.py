"""correo: a staff member's Zoho connection, the daily digest and ask telemetry.

Mail bodies are never stored: a digest keeps sender, subject, date and the model's category
and reason; telemetry keeps the first 500 characters of a question.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from erp.crypto import EncryptedTextField
from erp.tenancy.models import TenantOwnedModel

QUESTION_STORED_CHARS = 500


class ZohoConnection(TenantOwnedModel):
    """One staff member's Zoho Mail mailbox (OAuth refresh token, encrypted)."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="zoho_connection",
        verbose_name=_("usuario"),
    )
    data_centre = models.CharField(_("centro de datos"), max_length=20, default="com")
    accounts_base_url = models.URLField(_("URL de cuentas"), blank=True)
    mail_base_url = models.URLField(_("URL de correo"), blank=True)
    account_id = models.CharField(_("id de cuenta"), max_length=64, blank=True)
    email = models.EmailField(_("correo del buzón"), blank=True)
    refresh_token = EncryptedTextField(_("token de renovación"), blank=True)
    access_token = EncryptedTextField(_("token de acceso"), blank=True)
    access_token_expires_at = models.DateTimeField(null=True, blank=True)
    scopes = models.CharField(_("permisos"), max_length=500, blank=True)
    connected_at = models.DateTimeField(_("conectado"), null=True, blank=True)
    last_error = models.TextField(_("último error"), blank=True)
    last_error_at = models.DateTimeField(_("fecha del último error"), null=True, blank=True)

    class Meta:
        verbose_name = _("conexión con Zoho Mail")
        verbose_name_plural = _("conexiones con Zoho Mail")
        indexes = [models.Index(fields=["tenant", "owner"], name="zoho_tenant_owner")]

    def __str__(self) -> str:
        return self.email or str(self.owner)

    @property
    def is_connected(self) -> bool:
        return bool(self.refresh_token)


class Digest(TenantOwnedModel):
    """Table `correo_digests`: the latest daily report of a member's inbox."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="correo_digests",
        verbose_name=_("usuario"),
    )
    generated_at = models.DateTimeField(_("generado"), db_index=True)
    resumen = models.TextField(_("resumen"))
    ruido_count = models.IntegerField(_("mensajes de ruido"), default=0)
    payload = models.JSONField(_("contenido"), default=dict)

    class Meta:
        verbose_name = _("informe diario")
        verbose_name_plural = _("informes diarios")
        ordering = ["-generated_at"]
        indexes = [
            models.Index(fields=["tenant", "owner", "-generated_at"], name="digest_owner_latest")
        ]

    def __str__(self) -> str:
        return f"{self.owner} {self.generated_at:%Y-%m-%d}"


class ChatQuery(TenantOwnedModel):
    """Table `correo_chat_queries`: telemetry of one ask (and the rate-limit window)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="correo_chat_queries",
        verbose_name=_("usuario"),
    )
    question = models.CharField(_("pregunta"), max_length=QUESTION_STORED_CHARS)
    tool_rounds = models.IntegerField(_("rondas de herramientas"), default=0)
    duration_ms = models.IntegerField(_("duración (ms)"), default=0)
    created_at = models.DateTimeField(_("fecha"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("consulta a la secretaria")
        verbose_name_plural = _("consultas a la secretaria")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "owner", "-created_at"], name="chatquery_owner_recent")
        ]

    def __str__(self) -> str:
        return self.question[:60]
