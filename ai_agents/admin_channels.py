"""Admin for channel bindings (all three types), with the same rules as the REST API
(`ai_agents.services.channels`). The access token is write-only; the e-mail webhook URL and the
web chat snippet are shown ready to copy. The e-mail path token lets anyone post mail to the
agent, so it (and the URL holding it) is shown only to who may change the row (owner, admin)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from ai_agents.models import ChannelBinding
from ai_agents.services import channels as services
from erp.tenancy.admin_base import TenantOwnedAdmin
from erp.tenancy.admin_secrets import SecretFieldsAdminMixin, WriteOnlyInput

_request: ContextVar[HttpRequest | None] = ContextVar("channel_admin_request", default=None)


class ChannelBindingForm(forms.ModelForm):
    access_token = forms.CharField(
        label=_("nuevo token de acceso"),
        required=False,
        strip=True,
        widget=WriteOnlyInput(),
        help_text=_("Solo WhatsApp. Solo escritura: déjelo vacío para conservar el actual."),
    )
    allowed_origins = forms.CharField(
        label=_("orígenes permitidos"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Solo chat web. Uno por línea, p. ej. https://tienda.es"),
    )

    class Meta:
        model = ChannelBinding
        # The admin adds tenant and agent with querysets limited to the user's tenants.
        fields = [
            "type",
            "name",
            "is_active",
            "phone_number_id",
            "access_token",
            "whatsapp_template",
            "address",
            "allowed_origins",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:  # (a new row already has its UUID pk)
            if "type" in self.fields:
                self.fields["type"].disabled = True
            self.initial["allowed_origins"] = "\n".join(self.instance.allowed_origins or [])
        self.initial.pop("access_token", None)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = data.get("type") or self.instance.type
        if kind not in services.TYPE_FIELDS:
            return data
        if not data.get("access_token"):
            data["access_token"] = self.instance.access_token or ""
        origins = [line.strip() for line in (data.get("allowed_origins") or "").splitlines()]
        data["allowed_origins"] = [o for o in origins if o]
        probe = ChannelBinding(
            pk=self.instance.pk,
            tenant_id=self.instance.tenant_id,
            type=kind,
            token=self.instance.token,
        )
        try:
            for field in services.ALL_TYPE_FIELDS:
                if field not in services.TYPE_FIELDS[kind]:
                    data[field] = (
                        []
                        if field == "allowed_origins"
                        else ({} if field == "whatsapp_template" else "")
                    )
                elif data.get(field) not in (None, "", [], {}):
                    data[field] = services.CLEANERS[field](data[field])
                setattr(probe, field, data.get(field))
            services.channel_check(probe)
        except ValidationError as exc:
            self._errors_add(exc)
        agent, tenant = data.get("agent"), data.get("tenant")
        if agent is not None and tenant is not None and agent.tenant_id != tenant.pk:
            self.add_error("agent", _("El agente es de otra empresa."))
        return data

    def _errors_add(self, exc: ValidationError) -> None:
        for field, messages in exc.message_dict.items():
            target = field if field in self.fields else None
            for message in messages:
                self.add_error(target, message)


class ChannelBindingAdmin(SecretFieldsAdminMixin, TenantOwnedAdmin):
    form = ChannelBindingForm
    secret_fields = ("access_token",)
    list_display = ["__str__", "type", "agent", "is_active", "created_at"]
    list_filter = ["type", "is_active"]
    search_fields = ["name", "phone_number_id", "address"]
    readonly_fields = ["token", "webhook_url", "embed_snippet", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["tenant", "agent", "type", "name", "is_active"]}),
        (
            _("WhatsApp"),
            {"fields": ["phone_number_id", "access_token", "whatsapp_template"]},
        ),
        (_("Correo electrónico"), {"fields": ["address", "webhook_url"]}),
        (_("Chat web"), {"fields": ["allowed_origins", "embed_snippet"]}),
        (_("Registro"), {"fields": ["token", "created_at", "updated_at"]}),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        excluded = set(self.get_exclude(request, obj) or [])
        if obj is not None and not self.can_write(request, obj):
            excluded |= {"token", "webhook_url"}  # the read-only agent role
        return [
            (title, {**opts, "fields": [f for f in opts["fields"] if f not in excluded]})
            for title, opts in fieldsets
        ]

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        token = _request.set(request)  # absolute URLs in the read-only fields
        try:
            response = super().changeform_view(request, object_id, form_url, extra_context)
            if hasattr(response, "render"):
                response.render()  # while the request is known (TemplateResponse is lazy)
            return response
        finally:
            _request.reset(token)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not obj.tenant_id and obj.agent_id:
            obj.tenant_id = obj.agent.tenant_id  # the agent decides the tenant
        super().save_model(request, obj, form, change)

    @admin.display(description=_("URL del webhook de correo entrante"))
    def webhook_url(self, obj: ChannelBinding) -> str:
        if obj._state.adding or obj.type != ChannelBinding.Type.EMAIL:
            return "—"
        return _absolute(reverse("webhook-email", args=[obj.token]))

    @admin.display(description=_("código para insertar el chat"))
    def embed_snippet(self, obj: ChannelBinding) -> str:
        if obj._state.adding or obj.type != ChannelBinding.Type.WEBCHAT:
            return "—"
        src = _absolute("/widget.js")
        snippet = f'<script src="{src}" data-key="{obj.token}"></script>'
        return format_html("<code>{}</code>", snippet)


def _absolute(path: str) -> str:
    request = _request.get()
    return request.build_absolute_uri(path) if request is not None else path


admin.site.register(ChannelBinding, ChannelBindingAdmin)
