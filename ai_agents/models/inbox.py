"""What a staff member chose for their inbox pages (per person, whatever the tenant)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


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
