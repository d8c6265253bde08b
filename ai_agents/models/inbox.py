"""The staff inbox's own rows: read markers, internal notes, canned replies, and what each staff
member chose for their inbox pages."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ai_agents.models.agents import Conversation
from erp.tenancy.models import TenantOwnedModel

NOTE_MAX_CHARS = 4000
CANNED_TEXT_MAX_CHARS = 4000
SHORTCUT_MAX_CHARS = 40


class ConversationRead(TenantOwnedModel):
    """Until when a staff member has read a conversation: customer messages after it are
    their unread count."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("usuario"),
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="+", verbose_name=_("conversación")
    )
    last_read_at = models.DateTimeField(_("leída hasta"), default=timezone.now)

    class Meta:
        verbose_name = _("lectura de conversación")
        verbose_name_plural = _("lecturas de conversaciones")
        constraints = [
            models.UniqueConstraint(fields=["conversation", "user"], name="conv_read_unique")
        ]


class ConversationNote(TenantOwnedModel):
    """A staff member's internal note on a conversation: never sent to the customer."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="notes", verbose_name=_("conversación")
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("autor"),
    )
    text = models.TextField(_("texto"), max_length=NOTE_MAX_CHARS)
    created_at = models.DateTimeField(_("fecha"), default=timezone.now)

    class Meta:
        verbose_name = _("nota interna")
        verbose_name_plural = _("notas internas")
        indexes = [
            models.Index(fields=["tenant", "conversation", "created_at"], name="note_tenant_conv")
        ]

    def __str__(self) -> str:
        return self.text[:40]


class CannedReply(TenantOwnedModel):
    """A saved answer the team inserts with "/" + shortcut; variables such as
    {{contact.name}} are filled in for the conversation (`ai_agents.services.canned_replies`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    shortcut = models.CharField(_("atajo"), max_length=SHORTCUT_MAX_CHARS)
    title = models.CharField(_("título"), max_length=200)
    text = models.TextField(_("texto"), max_length=CANNED_TEXT_MAX_CHARS)
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)
    updated_at = models.DateTimeField(_("actualizada"), auto_now=True)

    class Meta:
        verbose_name = _("respuesta guardada")
        verbose_name_plural = _("respuestas guardadas")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "shortcut"], name="canned_unique_shortcut")
        ]

    def __str__(self) -> str:
        return f"/{self.shortcut}"


class InboxPreference(models.Model):
    """Alerts when a conversation starts waiting for a person: the count in the tab title is
    always on; a browser notification and a sound only when the person asks for them."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="inbox_preference",
        verbose_name=_("usuario"),
    )
    notify_desktop = models.BooleanField(_("avisos del navegador"), default=False)
    notify_sound = models.BooleanField(_("sonido"), default=False)
    updated_at = models.DateTimeField(_("actualizado"), auto_now=True)

    class Meta:
        verbose_name = _("preferencias de la bandeja")
        verbose_name_plural = _("preferencias de la bandeja")

    def __str__(self) -> str:
        return str(self.user)
