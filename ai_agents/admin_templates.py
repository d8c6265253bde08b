"""Admin for WhatsApp templates: the synced rows are read-only (Meta is their source); the
"Sincronizar" action reads each selected row's channel again (also offered on the channels'
list, for a channel that has none yet). An agent's follow-up template is set here too.

Rights per object: viewing needs a membership of the row's tenant, syncing and editing the
follow-up the owner or admin role there (`role_in`, checked on each selected row)."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.models import ChannelBinding, TemplateFollowup, WhatsAppTemplate
from ai_agents.services.whatsapp_templates import TemplateSyncError, whatsapp_templates_sync
from erp.tenancy.admin_base import ReadOnlyTenantOwnedAdmin, TenantOwnedAdmin

logger = logging.getLogger(__name__)


def bindings_sync(request: HttpRequest, bindings: list[ChannelBinding]) -> None:
    """Syncs each binding once and tells the person what happened, in words. An unexpected
    error (a malformed answer from Meta, a bug) is logged and said in words, never a 500, and
    the other selected channels are synced all the same (the store is one transaction: a
    failed channel keeps its previous templates)."""
    for binding in {b.pk: b for b in bindings}.values():
        try:
            result = whatsapp_templates_sync(binding=binding)
        except TemplateSyncError as error:
            messages.error(request, f"{binding}: {error.message}")
            continue
        except Exception:
            logger.exception(
                "whatsapp.templates_sync_crashed", extra={"binding_id": str(binding.pk)}
            )
            messages.error(
                request,
                _(
                    "%(channel)s: no se pudieron sincronizar las plantillas por un error "
                    "inesperado; no se ha cambiado nada. Inténtelo más tarde y, si se repite, "
                    "avise al soporte."
                )
                % {"channel": binding},
            )
            continue
        messages.success(
            request,
            _(
                "%(channel)s: %(created)s nuevas, %(updated)s actualizadas, "
                "%(removed)s ya no están en Meta."
            )
            % {"channel": binding, **result.as_dict()},
        )


# Meta's codes ("APPROVED", "utility") in words; a code Meta adds later reads as "otro".
STATUSES = dict(WhatsAppTemplate.Status.choices)
CATEGORIES = {
    "marketing": gettext_lazy("marketing"),
    "utility": gettext_lazy("utilidad"),
    "authentication": gettext_lazy("autenticación"),
}
IN_WORDS = {"status": "status_label", "category": "category_label"}


def _in_words(labels: dict[str, Any], code: str) -> Any:
    return labels.get(code, labels.get(code.lower(), gettext_lazy("otro")))


class _CodeFilter(admin.SimpleListFilter):
    labels: dict[str, Any] = {}

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        codes = model_admin.get_queryset(request).values_list(self.parameter_name, flat=True)
        return [(code, _in_words(self.labels, code)) for code in sorted(set(codes))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{str(self.parameter_name): value}) if value else queryset


class StatusFilter(_CodeFilter):
    title = gettext_lazy("estado")
    parameter_name = "status"
    labels = STATUSES


class CategoryFilter(_CodeFilter):
    title = gettext_lazy("categoría")
    parameter_name = "category"
    labels = CATEGORIES


@admin.register(WhatsAppTemplate)
class WhatsAppTemplateAdmin(ReadOnlyTenantOwnedAdmin):
    list_display = ["name", "language", "category_label", "status_label", "binding", "synced_at"]
    list_filter = [StatusFilter, CategoryFilter]
    search_fields = ["name", "body_text"]
    actions = ["sync"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        names = super().get_readonly_fields(request, obj)
        return [IN_WORDS.get(name, name) for name in names]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_readonly_fields(request, obj)

    @admin.display(description=gettext_lazy("estado"), ordering="status")
    def status_label(self, row: WhatsAppTemplate) -> Any:
        return _in_words(STATUSES, row.status)

    @admin.display(description=gettext_lazy("categoría"), ordering="category")
    def category_label(self, row: WhatsAppTemplate) -> Any:
        return _in_words(CATEGORIES, row.category)

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
