"""The agent page's model settings: which provider and model answer, whether the key is set
(never the key), "Probar conexión", and a warning wherever the provider cannot run.

Saving an agent whose provider cannot run is allowed, with a warning: the key is the
server's (environment), not something the owner can type in this form, so refusing the save
would only block every other edit (messages, triggers) until an operator sets it; the page
keeps saying so until then.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.messages.storage.base import BaseStorage
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from ai_agents.admin_agent_form import agent_fieldsets
from ai_agents.models import Agent
from ai_agents.selectors.agent_model import agent_model_status
from ai_agents.services.agent_model import agent_model_ping
from erp.tenancy.admin_secrets import secret_badge


def _warn_once(request: HttpRequest, text: str) -> None:
    """A warning, unless the same one is already waiting (the save's, after a redirect)."""
    storage = messages.get_messages(request)
    present = any(str(m) == text for m in storage)
    if isinstance(storage, BaseStorage):
        storage.used = False  # reading them above must not drop them
    if not present:
        messages.warning(request, text)


def _status_html(agent: Agent, ping_url: str) -> SafeString:
    """The panel; on the add page `agent` is the unsaved one (what a new agent would use)."""
    status = agent_model_status(agent=agent)
    html = render_to_string(
        "ai_agents/agent_model_status.html",
        {"status": status, "badge": secret_badge(status.key_set), "ping_url": ping_url},
    )
    return mark_safe(html)  # noqa: S308  (a template rendered with autoescape)


class AgentModelAdminMixin:
    """For `AgentAdmin`: the grouped fields, the model panel, its ping and the warnings."""

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        # `AgentForm` lists only its own fields; the admin's list of the fields to show (asked
        # with fields=None) must still hold every field: the tenant and the knowledge bases too.
        if "fields" in kwargs and kwargs["fields"] is None:
            kwargs["fields"] = forms.ALL_FIELDS
        return super().get_form(request, obj, change=change, **kwargs)  # type: ignore[misc]  # a mixin of ModelAdmin

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))  # type: ignore[misc]  # a mixin of ModelAdmin
        can_ping = obj is not None and self.has_change_permission(request, obj)  # type: ignore[attr-defined]  # a mixin of ModelAdmin
        return [*fields, "model_status" if can_ping else "model_status_view"]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return agent_fieldsets(list(self.get_fields(request, obj)))  # type: ignore[attr-defined]  # a mixin of ModelAdmin

    @admin.display(description=gettext_lazy("estado del modelo"))
    def model_status(self, obj: Agent) -> SafeString:
        return _status_html(obj, reverse("admin:ai_agents_agent_model_ping", args=[obj.pk]))

    @admin.display(description=gettext_lazy("estado del modelo"))
    def model_status_view(self, obj: Agent) -> SafeString:
        return _status_html(obj, "")

    def get_urls(self) -> list[Any]:
        own = [
            path(
                "<path:object_id>/model-ping/",
                self.admin_site.admin_view(require_POST(self.model_ping_view)),  # type: ignore[attr-defined]  # a mixin of ModelAdmin
                name="ai_agents_agent_model_ping",
            )
        ]
        return own + super().get_urls()  # type: ignore[misc]  # a mixin of ModelAdmin

    def model_ping_view(self, request: HttpRequest, object_id: str) -> JsonResponse:
        agent = self.get_object(request, unquote(object_id))  # type: ignore[attr-defined]  # a mixin of ModelAdmin
        if agent is None:
            return JsonResponse({"error": _("No existe ese agente.")}, status=404)
        if not self.has_change_permission(request, agent):  # type: ignore[attr-defined]  # a mixin of ModelAdmin
            message = _("Solo quien puede editar el agente puede probar la conexión.")
            return JsonResponse({"error": message}, status=403)
        result = agent_model_ping(agent=agent)
        return JsonResponse({"ok": result.ok, "message": result.message, "detail": result.detail})

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        if request.method == "GET":
            agent = self.get_object(request, unquote(object_id))  # type: ignore[attr-defined]  # a mixin of ModelAdmin
            problem = agent_model_status(agent=agent).problem if agent is not None else ""
            if problem:
                _warn_once(request, problem)
        return super().change_view(request, object_id, form_url, extra_context)  # type: ignore[misc]  # a mixin of ModelAdmin

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)  # type: ignore[misc]  # a mixin of ModelAdmin
        problem = agent_model_status(agent=obj).problem
        if problem:
            messages.warning(request, problem)
