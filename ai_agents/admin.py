"""Admin: knowledge bases with multi-file upload, URL import, pasted text and live progress;
documents with re-index, delete and a chunk preview. Writes go through the knowledge services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.validators import validate_email
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from ai_agents import admin_kb_sources as kb_sources
from ai_agents.admin_agent import AgentModelAdminMixin
from ai_agents.admin_agent_form import AgentForm
from ai_agents.admin_documents import TextDocumentAddMixin
from ai_agents.admin_playground import AgentPlaygroundMixin
from ai_agents.models import Agent, Chunk, Document, HandoffSettings, HttpTool, KnowledgeBase
from ai_agents.services import knowledge_documents
from erp.tenancy.admin_base import TenantAdminMixin, TenantOwnedAdmin
from erp.tenancy.admin_secrets import (
    SecretFieldsAdminMixin,
    WriteOnlyInput,
    WriteOnlyTextarea,
    keep_secret,
)

PREVIEW_CHARS = 300


def _status_row(document: Document) -> dict[str, Any]:
    return {
        "id": str(document.pk),
        "title": document.title,
        "status": document.status,
        "status_label": str(document.get_status_display()),
        "progress": document.progress,
        "chunk_count": document.chunk_count,
        "error": document.error,
    }


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(TenantOwnedAdmin):
    list_display = ["name", "embedding_model", "embedding_dimensions", "document_count"]
    search_fields = ["name", "description"]
    change_form_template = "admin/ai_agents/knowledgebase/change_form.html"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # The embedding space is fixed once a base exists (its vectors depend on it).
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields += ["embedding_provider", "embedding_model", "embedding_dimensions"]
        return fields

    @admin.display(description=gettext_lazy("documentos"))
    def document_count(self, obj: KnowledgeBase) -> int:
        return Document.objects.for_tenant(obj.tenant_id).filter(knowledge_base=obj).count()

    def get_urls(self) -> list[Any]:
        own = [
            path(
                "<path:object_id>/add/<str:source>/",
                self.admin_site.admin_view(require_POST(self.add_documents_view)),
                name="ai_agents_knowledgebase_add_documents",
            ),
            path(
                "<path:object_id>/status/",
                self.admin_site.admin_view(require_GET(self.status_view)),
                name="ai_agents_knowledgebase_status",
            ),
        ]
        return own + super().get_urls()

    def _kb(self, request: HttpRequest, object_id: str) -> KnowledgeBase:
        kb = self.get_object(request, object_id)
        if kb is None:
            raise Http404
        return kb

    def add_documents_view(self, request: HttpRequest, object_id: str, source: str) -> HttpResponse:
        """Files (`upload`), a web address (`url`) or a pasted text (`text`)."""
        kb = self._kb(request, object_id)
        add = kb_sources.SOURCES.get(source)
        if add is None:
            raise Http404
        if not self.has_change_permission(request, kb):  # decided by the role in kb's tenant
            raise PermissionDenied
        add(request, kb)
        return HttpResponseRedirect(reverse("admin:ai_agents_knowledgebase_change", args=[kb.pk]))

    def status_view(self, request: HttpRequest, object_id: str) -> JsonResponse:
        kb = self._kb(request, object_id)
        documents = Document.objects.for_tenant(kb.tenant_id).filter(knowledge_base=kb)
        rows = [_status_row(d) for d in documents.defer("data").order_by("-created_at")[:200]]
        return JsonResponse({"documents": rows})

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        extra = dict(extra_context or {})
        kb = self.get_object(request, object_id)
        if kb is not None:
            documents = Document.objects.for_tenant(kb.tenant_id).filter(knowledge_base=kb)
            extra["kb_documents"] = documents.defer("data").order_by("-created_at")[:200]
            extra["kb_add_urls"] = {
                source: reverse("admin:ai_agents_knowledgebase_add_documents", args=[kb.pk, source])
                for source in kb_sources.SOURCES
            }
            extra["kb_url_form"] = kb_sources.UrlImportForm(auto_id="kb-url-%s")
            extra["kb_text_form"] = kb_sources.PasteTextForm(auto_id="kb-text-%s")
            extra["kb_status_url"] = reverse("admin:ai_agents_knowledgebase_status", args=[kb.pk])
            extra["kb_can_upload"] = self.has_change_permission(request, kb)
        return super().change_view(request, object_id, form_url, extra)


_DOCUMENT_FIELDS = Document.SHOWN_FIELDS
_CHUNK_FIELDS = ("ordinal", "heading_text", "token_count", "preview")


class ChunkInline(TenantAdminMixin, admin.TabularInline):
    model = Chunk
    extra = 0
    can_delete = False
    max_num = 0
    fields = _CHUNK_FIELDS
    readonly_fields = _CHUNK_FIELDS
    ordering = ["ordinal"]
    verbose_name_plural = gettext_lazy("fragmentos (vista previa)")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        # The parent document is already tenant-checked; the formset filters by it.
        return Chunk.objects.unscoped().defer("embedding")

    @admin.display(description=gettext_lazy("contenido"))
    def preview(self, obj: Chunk) -> str:
        text = obj.content
        return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Document)
class DocumentAdmin(TextDocumentAddMixin, TenantOwnedAdmin):
    list_display = ["title", "knowledge_base", "status", "progress", "chunk_count", "created_at"]
    list_filter = ["status", "source"]
    search_fields = ["title", "original_filename"]
    actions = ["reindex"]
    inlines = [ChunkInline]
    fields = _DOCUMENT_FIELDS
    readonly_fields = _DOCUMENT_FIELDS

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).defer("data").select_related("knowledge_base")

    @admin.action(description=gettext_lazy("Volver a indexar"), permissions=["change"])
    def reindex(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        count = 0
        for document in queryset:
            knowledge_documents.document_reindex(document=document)
            count += 1
        messages.success(request, _("%(n)s documento(s) en cola.") % {"n": count})


@admin.register(Agent)
class AgentAdmin(AgentPlaygroundMixin, AgentModelAdminMixin, TenantOwnedAdmin):
    """Agent configuration: widgets over the JSON blocks (`Agent.clean` validates them and names
    the bad key), the model settings panel (`ai_agents.admin_agent`) and the playground
    (`ai_agents.admin_playground`)."""

    form = AgentForm

    list_display = ["name", "provider", "model", "is_active", "updated_at"]
    search_fields = ["name", "description"]
    filter_horizontal = ["knowledge_bases"]


class HttpToolForm(forms.ModelForm):
    """The headers (often an Authorization) are write-only: empty keeps the stored ones."""

    headers_json = forms.CharField(
        label=gettext_lazy("nuevas cabeceras (JSON)"),
        required=False,
        widget=WriteOnlyTextarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text=gettext_lazy(
            'Objeto JSON, p. ej. {"Authorization": "Bearer ..."}. Solo escritura: escriba todas '
            "las cabeceras para reemplazarlas, o déjelo vacío para conservar las actuales."
        ),
    )
    headers_json_clear = forms.BooleanField(
        label=gettext_lazy("borrar las cabeceras"), required=False
    )

    class Meta:
        model = HttpTool
        fields = [
            "tenant",
            "name",
            "description",
            "method",
            "url_template",
            "headers_json",
            "args_schema",
            "timeout_ms",
            "max_response_chars",
            "is_active",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial.pop("headers_json", None)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        clear = bool(data.get("headers_json_clear"))
        data["headers_json"] = keep_secret(self, "headers_json", clear=clear)
        return data


@admin.register(HttpTool)
class HttpToolAdmin(SecretFieldsAdminMixin, TenantOwnedAdmin):
    """Tenant HTTP tools; headers are stored encrypted and write-only; `HttpTool.clean` checks
    the URL template, the argument schema and the name."""

    form = HttpToolForm
    secret_fields = ("headers_json",)
    list_display = ["name", "method", "url_template", "is_active"]
    search_fields = ["name", "description"]

    def secret_detail(self, name: str, obj: HttpTool) -> str:
        try:
            return ", ".join(obj.headers)  # the names only: the values are the secret
        except (ValueError, AttributeError):
            return ""


class HandoffSettingsForm(forms.ModelForm):
    """Recipients as one address per line; the webhook secret is write-only (left empty, the
    stored one is kept)."""

    notify_emails = forms.CharField(
        label=gettext_lazy("avisar por correo a"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy(
            "Una dirección por línea. Vacío: todos los miembros del equipo con correo."
        ),
    )
    webhook_url = forms.URLField(
        label=gettext_lazy("webhook de aviso"),
        required=False,
        max_length=2000,
        assume_scheme="https",
        help_text=gettext_lazy("POST JSON firmado en cada escalación (opcional)."),
    )
    webhook_secret = forms.CharField(
        label=gettext_lazy("nuevo secreto del webhook"),
        required=False,
        widget=WriteOnlyInput(),
        help_text=gettext_lazy(
            "Firma HMAC-SHA256 del cuerpo en X-Signature-256. Déjelo vacío para conservar el "
            "actual."
        ),
    )
    webhook_secret_clear = forms.BooleanField(
        label=gettext_lazy("borrar el secreto"), required=False
    )

    class Meta:
        model = HandoffSettings
        fields = [
            "tenant",
            "notify_emails",
            "webhook_url",
            "webhook_secret",
            "claim_lease_minutes",
            "renotify_minutes",
            "customer_notices",
            "rating_request",
            "whatsapp_followup",
            "media_retention_days",
            "notice_claim_es",
            "notice_claim_en",
            "notice_release_es",
            "notice_release_en",
            "notice_close_es",
            "notice_close_en",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["notify_emails"] = "\n".join(self.instance.notify_emails or [])
        self.initial.pop("webhook_secret", None)
        if "media_retention_days" in self.fields:  # absent for a read-only member
            self.fields["media_retention_days"].required = False  # empty: 0, nothing kept

    def clean_media_retention_days(self) -> int:
        return int(self.cleaned_data.get("media_retention_days") or 0)

    def clean_notify_emails(self) -> list[str]:
        raw = self.cleaned_data.get("notify_emails") or ""
        emails = [e.strip() for e in raw.replace(",", "\n").splitlines() if e.strip()]
        for email in emails:
            validate_email(email)
        return list(dict.fromkeys(emails))

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        clear = bool(data.get("webhook_secret_clear"))
        data["webhook_secret"] = keep_secret(self, "webhook_secret", clear=clear)
        return data


@admin.register(HandoffSettings)
class HandoffSettingsAdmin(SecretFieldsAdminMixin, TenantOwnedAdmin):
    """Who hears about escalations (e-mail, signed webhook) and how long a claim lasts."""

    form = HandoffSettingsForm
    secret_fields = ("webhook_secret",)
    list_display = [
        "__str__",
        "webhook_url",
        "claim_lease_minutes",
        "renotify_minutes",
        "has_secret",
    ]

    @admin.display(description=gettext_lazy("secreto"), boolean=True)
    def has_secret(self, obj: HandoffSettings) -> bool:
        return bool(obj.webhook_secret)


from ai_agents import (  # noqa: E402, F401  (bindings, canned replies)
    admin_channels,
    admin_inbox,
    admin_templates,
)
