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
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from ai_agents.admin_templates import bindings_sync
from ai_agents.channels.webchat import appearance as look
from ai_agents.channels.webchat import visitor as webchat
from ai_agents.models import ChannelBinding
from ai_agents.services import channels as services
from erp.tenancy.admin_base import TenantOwnedAdmin
from erp.tenancy.admin_secrets import SecretFieldsAdminMixin, WriteOnlyInput

_EMPTY: dict[str, Any] = {"allowed_origins": [], "whatsapp_template": {}, "appearance": {}}
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
        help_text=_(
            "Solo chat web. Uno por línea, p. ej. https://tienda.es; https://*.tienda.es admite "
            "cada subdominio (una sola parte)."
        ),
    )

    look_color = forms.CharField(
        label=_("color principal"),
        required=False,
        initial=look.DEFAULT_COLOR,
        widget=forms.TextInput(attrs={"type": "color"}),
        help_text=_(
            "Botón, cabecera y botón de enviar. El color del texto encima (blanco o negro) se "
            "elige solo para que se lea bien."
        ),
    )
    look_title = forms.CharField(
        label=_("título"),
        required=False,
        max_length=look.TEXT_MAX["title"],
        help_text=_("Vacío: el nombre del agente."),
    )
    look_greeting = forms.CharField(
        label=_("saludo"),
        required=False,
        max_length=look.TEXT_MAX["greeting"],
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_(
            "Primera burbuja del asistente al abrir el chat (no se guarda como mensaje). "
            "Vacío: el saludo por defecto, en el idioma del visitante."
        ),
    )
    look_launcher_text = forms.CharField(
        label=_("texto del botón"),
        required=False,
        max_length=look.TEXT_MAX["launcher_text"],
        help_text=_("Vacío: «Abrir el chat», en el idioma del visitante."),
    )
    look_position = forms.ChoiceField(
        label=_("posición"),
        choices=[
            ("bottom-right", _("abajo a la derecha")),
            ("bottom-left", _("abajo a la izquierda")),
        ],
        initial="bottom-right",
        required=False,
    )
    look_avatar_url = forms.CharField(
        label=_("avatar (URL https)"),
        required=False,
        max_length=look.AVATAR_URL_MAX,
        help_text=_(
            "Imagen cuadrada en https, p. ej. https://tienda.es/logo.png. Si su web tiene CSP, "
            "añada ese host a img-src. Vacío: sin avatar."
        ),
    )

    class Media:
        js = ["ai_agents/webchat_look_preview.js"]

    class Meta:
        model = ChannelBinding
        # The admin adds tenant and agent with querysets limited to the user's tenants.
        fields = [
            "type",
            "name",
            "is_active",
            "phone_number_id",
            "access_token",
            "waba_id",
            "whatsapp_template",
            "address",
            "allowed_origins",
        ]
        help_texts = {
            "whatsapp_template": services.WHATSAPP_TEMPLATE_HELP,
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:  # (a new row already has its UUID pk)
            if "type" in self.fields:
                self.fields["type"].disabled = True
            self.initial["allowed_origins"] = "\n".join(self.instance.allowed_origins or [])
            stored = self.instance.appearance if isinstance(self.instance.appearance, dict) else {}
            for key in look.KEYS:
                if stored.get(key):
                    self.initial[f"look_{key}"] = stored[key]
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
        data["appearance"] = {key: data.get(f"look_{key}") or "" for key in look.KEYS}
        probe = ChannelBinding(
            pk=self.instance.pk,
            tenant_id=self.instance.tenant_id,
            type=kind,
            token=self.instance.token,
        )
        try:
            for field in services.ALL_TYPE_FIELDS:
                if field not in services.TYPE_FIELDS[kind]:
                    data[field] = _EMPTY.get(field, "")
                elif data.get(field) not in (None, "", [], {}):
                    data[field] = services.CLEANERS[field](data[field])
                setattr(probe, field, data.get(field))
            services.channel_check(probe)
            data["whatsapp_template"] = probe.whatsapp_template  # the synced category added
        except ValidationError as exc:
            self._errors_add(exc)
        # Not a form field of its own (the look_* fields make it): set here for save().
        self.instance.appearance = data.get("appearance") or {}
        agent, tenant = data.get("agent"), data.get("tenant")
        if agent is not None and tenant is not None and agent.tenant_id != tenant.pk:
            self.add_error("agent", _("El agente es de otra empresa."))
        return data

    def _errors_add(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for field, errors in exc.error_dict.items():
            for error in errors:
                # An appearance error is coded with its key: shown on that look_* field.
                target = f"look_{error.code}" if field == "appearance" else field
                for message in error.messages:
                    self.add_error(target if target in self.fields else None, message)


class ChannelBindingAdmin(SecretFieldsAdminMixin, TenantOwnedAdmin):
    form = ChannelBindingForm
    secret_fields = ("access_token",)
    list_display = ["__str__", "type", "agent", "is_active", "created_at"]
    list_filter = ["type", "is_active"]
    search_fields = ["name", "phone_number_id", "address"]
    actions = ["templates_sync"]
    readonly_fields = [
        "token",
        "webhook_url",
        "embed_snippet",
        "look_preview",
        "created_at",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["tenant", "agent", "type", "name", "is_active"]}),
        (
            _("WhatsApp"),
            {"fields": ["phone_number_id", "waba_id", "access_token", "whatsapp_template"]},
        ),
        (_("Correo electrónico"), {"fields": ["address", "webhook_url"]}),
        (_("Chat web"), {"fields": ["allowed_origins", "embed_snippet"]}),
        (
            _("Apariencia del chat web"),
            {
                "fields": [
                    "look_color",
                    "look_title",
                    "look_greeting",
                    "look_launcher_text",
                    "look_position",
                    "look_avatar_url",
                    "look_preview",
                ]
            },
        ),
        (_("Registro"), {"fields": ["token", "created_at", "updated_at"]}),
    ]

    def has_sync_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.can_write(request, obj)

    @admin.action(description=_("Sincronizar plantillas de WhatsApp"), permissions=["sync"])
    def templates_sync(self, request: HttpRequest, queryset: Any) -> None:
        bindings_sync(request, [b for b in queryset if b.type == ChannelBinding.Type.WHATSAPP])

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

    @admin.display(description=_("vista previa"))
    def look_preview(self, obj: ChannelBinding | None) -> str:
        return look_preview_html(obj)

    @admin.display(description=_("código para insertar el chat"))
    def embed_snippet(self, obj: ChannelBinding) -> str:
        if obj._state.adding or obj.type != ChannelBinding.Type.WEBCHAT:
            return "—"
        src = _absolute("/widget.js")
        snippet = f'<script src="{src}" data-key="{obj.token}"></script>'
        return format_html("<code>{}</code>", snippet)


def look_preview_html(obj: ChannelBinding | None) -> str:
    """The launcher, header and greeting as the widget draws them, from the saved values; a
    script (webchat_look_preview.js) follows the fields as they are edited. Escaped: the
    owner's texts are text here as in the widget."""
    agent_name = obj.agent.name if obj is not None and obj.agent_id else _("Asistente")
    stored = obj.appearance if obj is not None and isinstance(obj.appearance, dict) else {}
    lang = webchat.language_pick(get_language() or "")
    defaults = webchat.widget_texts(lang, str(agent_name))
    shown = webchat.widget_texts(lang, str(agent_name), own=stored)
    public = look.appearance_public(stored)
    return format_html(
        '<div class="wc-look-preview" data-look-preview data-title="{}" data-greeting="{}"'
        ' data-open="{}" data-position="{}">'
        '<div data-look-head style="display:flex;align-items:center;gap:8px;padding:10px 12px;'
        'background:{};color:{};border-radius:8px 8px 0 0;max-width:340px">'
        '<img data-look-avatar alt="" src="{}" width="32" height="32" referrerpolicy="no-referrer"'
        ' style="border-radius:50%;object-fit:cover;background:#fff"{}>'
        "<strong data-look-title>{}</strong></div>"
        '<p data-look-greeting style="max-width:300px;margin:8px 0;padding:8px 10px;'
        'border-radius:10px;background:#eef1f5;color:#1b1f24;white-space:pre-wrap">{}</p>'
        '<div style="display:flex;max-width:340px;justify-content:{}" data-look-row>'
        '<span data-look-launcher style="display:inline-block;border-radius:28px;'
        'padding:12px 18px;background:{};color:{}">{}</span></div></div>',
        defaults["title"],
        defaults["greeting"],
        defaults["open"],
        public["position"],
        public["color"],
        public["text_color"],
        public["avatar_url"],
        "" if public["avatar_url"] else mark_safe(" hidden"),
        shown["title"],
        shown["greeting"],
        "flex-start" if public["position"] == "bottom-left" else "flex-end",
        public["color"],
        public["text_color"],
        shown["open"],
    )


def _absolute(path: str) -> str:
    request = _request.get()
    return request.build_absolute_uri(path) if request is not None else path


admin.site.register(ChannelBinding, ChannelBindingAdmin)
