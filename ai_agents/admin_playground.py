"""The agent's "Probar agente" page in the admin (`/admin/ai_agents/agent/<id>/playground/`):
the playground and the saved tests, a page apart from the agent's form. The page only renders;
its script acts through the REST API (`/api/v1/agents/{id}/test`, `.../tests`), with the
session, the CSRF token and the agent's tenant (`X-Tenant`), so the API's rights apply."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from ai_agents.models import AgentTestCase
from ai_agents.services.playground import HISTORY_MAX_ITEMS, TEXT_MAX_CHARS


def playground_labels() -> dict[str, str]:
    """The words the page's script writes (translated here: no JS catalogue needed)."""
    return {
        "fired": _("disparado"),
        "not_fired": _("no disparado"),
        "none": _("ninguno"),
        "passed": _("pasa"),
        "failed": _("falla"),
        "regression": _("regresión"),
        "never": _("sin ejecutar"),
        "delete": _("Borrar"),
        "skipped": _("no ejecutada (cambia datos)"),
        "escalated": _("Pasa a una persona"),
        "no_answer": _("Dice que no lo sabe."),
        "you": _("Cliente"),
        "agent": _("Agente"),
        "running": _("Ejecutando…"),
        "progress": _("Pruebas ejecutadas: %(done)s de %(total)s…"),
        "generic": _("No se pudo completar. Inténtelo de nuevo."),
        "network": _("Sin conexión con el servidor."),
        "config_changed": _("Cambió desde la ejecución anterior: %(parts)s."),
        "config_same": _("La configuración no cambió desde la ejecución anterior."),
        "first_run": _("Primera ejecución."),
        "cases_changed": _("Pruebas que cambiaron de resultado: %(n)s."),
        "replies_changed": _("Respuestas distintas de la vez anterior: %(n)s."),
        "reply_changed": _("La respuesta cambió desde la vez anterior."),
        "summary": _("Pasan: %(passed)s, fallan: %(failed)s, regresiones: %(regressions)s."),
        "prompt": _("instrucciones"),
        "settings": _("ajustes"),
        "documents": _("documentos"),
    }


class AgentPlaygroundMixin:
    """Adds the page to the agent's admin (the agent's form is left as it is)."""

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(require_GET(self.playground_view))  # type: ignore[attr-defined]  # ModelAdmin's
        own = [path("<path:object_id>/playground/", view, name="ai_agents_agent_playground")]
        return own + super().get_urls()  # type: ignore[misc]  # ModelAdmin's

    def playground_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        agent = self.get_object(request, object_id)  # type: ignore[attr-defined]  # ModelAdmin's
        if agent is None:
            raise Http404
        if not self.has_change_permission(request, agent):  # type: ignore[attr-defined]  # ModelAdmin's
            raise PermissionDenied  # the role in the agent's tenant decides
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]  # ModelAdmin's
            "opts": agent._meta,
            "title": _("Probar agente: %(name)s") % {"name": agent.name},
            "agent": agent,
            "api_url": f"/api/v1/agents/{agent.pk}",
            "expectations": AgentTestCase.Expectation.choices,
            "labels": playground_labels(),
            "text_max": TEXT_MAX_CHARS,
            "history_max": HISTORY_MAX_ITEMS,
        }
        return TemplateResponse(request, "admin/ai_agents/agent/playground.html", context)
