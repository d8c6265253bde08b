"""Admin for WhatsApp templates: the synced rows are read-only (Meta is their source); the
"Sincronizar" action reads each selected row's channel again (also offered on the channels'
list, for a channel that has none yet). An agent's follow-up template is set here too.

Rights per object: viewing needs a membership of the row's tenant, syncing and editing the
follow-up the owner or admin role there (`role_in`, checked on each selected row)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.models import ChannelBinding, TemplateFollowup, WhatsAppTemplate
from ai_agents.services.whatsapp_templates import TemplateSyncError, whatsapp_templates_sync
from erp.tenancy.admin_base import ReadOnlyTenantOwnedAdmin, TenantOwnedAdmin


def bindings_sync(request: HttpRequest, bindings: list[ChannelBinding]) -> None:
    """Syncs each binding once and tells the person what happened, in words."""
    for binding in {b.pk: b for b in bindings}.values():
        try:
            result = whatsapp_templates_sync(binding=binding)
        except TemplateSyncError as error:
            messages.error(request, f"{binding}: {error.message}")
            continue
        messages.success(
            request,
            _(
                "%(channel)s: %(created)s nuevas, %(updated)s actualizadas, "
                "%(removed)s ya no están en Meta."
            )
            % {"channel": binding, **result.as_dict()},
        )


@admin.register(WhatsAppTemplate)
class WhatsAppTemplateAdmin(ReadOnlyTenantOwnedAdmin):
    list_display = ["name", "language", "category", "status", "binding", "synced_at"]
    list_filter = ["status", "category"]
    search_fields = ["name", "body_text"]
    actions = ["sync"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related("binding")

    def has_sync_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.can_write(request, obj)

    @admin.action(description=gettext_lazy("Sincronizar"), permissions=["sync"])
    def sync(self, request: HttpRequest, queryset: QuerySet[WhatsAppTemplate]) -> None:
        bindings_sync(request, [row.binding for row in queryset.select_related("binding")])


@admin.register(TemplateFollowup)
class TemplateFollowupAdmin(TenantOwnedAdmin):
    """The agent's follow-up before the WhatsApp window closes (runs when the tenant opted in
    with "seguimiento por plantilla de WhatsApp" in its handoff settings)."""

    list_display = ["agent", "template", "template_state", "lead_minutes", "is_active"]
    list_select_related = ["template"]

    @admin.display(description=gettext_lazy("estado de la plantilla"))
    def template_state(self, followup: TemplateFollowup) -> str:
        """A template Meta no longer lists (or not approved) sends nothing: shown in words."""
        status = followup.template.status
        labels = dict(WhatsAppTemplate.Status.choices)
        return str(labels.get(status, status))
