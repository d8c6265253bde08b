"""WhatsApp message templates: the approved ones a binding may send outside the 24-hour
customer-service window (synced from the Graph API), the idempotency key of a template sent
from the inbox, and the optional follow-up an agent sends before the window closes."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from erp.tenancy.models import TenantOwnedModel


class WhatsAppTemplate(TenantOwnedModel):
    """One template (name + language) of a binding's WhatsApp Business Account, as the last
    sync read it. Only `APPROVED` ones can be sent; rows Meta no longer lists are kept as
    `DELETED` (a follow-up may point at them)."""

    class Status(models.TextChoices):
        APPROVED = "APPROVED", _("aprobada")
        PENDING = "PENDING", _("pendiente")
        REJECTED = "REJECTED", _("rechazada")
        PAUSED = "PAUSED", _("en pausa")
        DISABLED = "DISABLED", _("desactivada")
        DELETED = "DELETED", _("ya no está en Meta")

    id = models.BigAutoField(primary_key=True)
    binding = models.ForeignKey(
        "ai_agents.ChannelBinding",
        on_delete=models.CASCADE,
        related_name="templates",
        verbose_name=_("canal"),
    )
    external_id = models.CharField(_("id en Meta"), max_length=64, blank=True)
    name = models.CharField(_("nombre"), max_length=512)
    language = models.CharField(_("idioma"), max_length=20)
    category = models.CharField(_("categoría"), max_length=30)
    status = models.CharField(_("estado"), max_length=30)
    body_text = models.TextField(_("texto"), blank=True)
    # The body's variables in order: ["1", "2"] (positional {{1}}) or ["first_name", ...]
    # (named parameters).
    variables = models.JSONField(_("variables"), default=list, blank=True)
    parameter_format = models.CharField(_("formato de variables"), max_length=12, blank=True)
    synced_at = models.DateTimeField(_("sincronizada"))

    class Meta:
        verbose_name = _("plantilla de WhatsApp")
        verbose_name_plural = _("plantillas de WhatsApp")
        ordering = ["name", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "name", "language"], name="wa_template_unique_name"
            ),
        ]
        indexes = [models.Index(fields=["tenant", "binding", "status"], name="wa_template_ix")]

    def __str__(self) -> str:
        return f"{self.name} ({self.language})"

    @property
    def approved(self) -> bool:
        return self.status == self.Status.APPROVED


class TemplateSend(TenantOwnedModel):
    """A template sent from the inbox, keyed by the client's key: a retried request finds the
    message of the first one instead of sending again."""

    id = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(
        "ai_agents.Conversation", on_delete=models.CASCADE, related_name="+"
    )
    client_key = models.CharField(_("clave del cliente"), max_length=100)
    message = models.ForeignKey("ai_agents.Message", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)

    class Meta:
        verbose_name = _("envío de plantilla")
        verbose_name_plural = _("envíos de plantillas")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "conversation", "client_key"], name="template_send_unique_key"
            ),
        ]


class TemplateFollowup(TenantOwnedModel):
    """An agent's follow-up: one template sent `lead_minutes` before the WhatsApp window of a
    conversation closes, when the customer left our last message unanswered. Runs only while
    the tenant opted in (`HandoffSettings.whatsapp_followup`)."""

    id = models.BigAutoField(primary_key=True)
    agent = models.OneToOneField(
        "ai_agents.Agent",
        on_delete=models.CASCADE,
        related_name="template_followup",
        verbose_name=_("agente"),
    )
    template = models.ForeignKey(
        WhatsAppTemplate,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("plantilla"),
    )
    variables = models.JSONField(
        _("valores de las variables"),
        default=list,
        blank=True,
        help_text=_('En orden, p. ej. ["Ana"]. «{nombre}» pone el nombre del cliente.'),
    )
    lead_minutes = models.PositiveIntegerField(
        _("minutos antes del cierre de la ventana"),
        default=60,
        validators=[MinValueValidator(5), MaxValueValidator(23 * 60)],
    )
    is_active = models.BooleanField(_("activo"), default=True)

    class Meta:
        verbose_name = _("seguimiento por plantilla")
        verbose_name_plural = _("seguimientos por plantilla")

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.template_id}"

    def clean(self) -> None:
        """The template must be of one of the agent's own WhatsApp channels."""
        super().clean()
        if self.template_id and self.agent_id and self.tenant_id:
            owner = WhatsAppTemplate.objects.for_tenant(self.tenant_id).filter(pk=self.template_id)
            if owner.values_list("binding__agent_id", flat=True).first() != self.agent_id:
                raise ValidationError(
                    {"template": _("La plantilla es de un canal de WhatsApp de otro agente.")}
                )


class FollowupSent(TenantOwnedModel):
    """The marker of a conversation's follow-up: its unique conversation makes "never twice"
    hold under concurrent beat runs (the INSERT that loses sends nothing)."""

    id = models.BigAutoField(primary_key=True)
    conversation = models.OneToOneField(
        "ai_agents.Conversation", on_delete=models.CASCADE, related_name="+"
    )
    message = models.ForeignKey(
        "ai_agents.Message", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(_("creado"), auto_now_add=True)

    class Meta:
        verbose_name = _("seguimiento enviado")
        verbose_name_plural = _("seguimientos enviados")
