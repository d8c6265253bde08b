"""Admin: a text document added by hand (title and text, into one of the user's knowledge
bases). The statistics page links here from an unanswered question with the form prefilled
through the query string (`?title=...&text=...`, as Django's own add pages accept). The
document goes through the knowledge service like an API text document (queued for indexing)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.models import Document, KnowledgeBase
from ai_agents.services import knowledge as services
from ai_agents.services import knowledge_documents
from erp.tenancy.admin_base import managed_tenant_ids

TEXT_MAX_CHARS = 100_000


class TextDocumentForm(forms.Form):
    knowledge_base = forms.ModelChoiceField(
        queryset=KnowledgeBase.objects.unscoped().none(), label=gettext_lazy("base de conocimiento")
    )
    title = forms.CharField(max_length=300, label=gettext_lazy("título"))
    text = forms.CharField(
        max_length=TEXT_MAX_CHARS,
        strip=False,
        label=gettext_lazy("texto"),
        widget=forms.Textarea(attrs={"rows": 14}),
    )


class TextDocumentAddMixin:
    """For DocumentAdmin: the add page is the text form (files are uploaded from their
    knowledge base's page)."""

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self.can_write(request)  # type: ignore[attr-defined]  # a mixin of TenantOwnedAdmin

    def _bases(self, request: HttpRequest) -> Any:
        rows = KnowledgeBase.objects.unscoped().order_by("name", "pk")
        if request.user.is_superuser:
            return rows
        return rows.filter(tenant_id__in=managed_tenant_ids(request))

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        bound = request.POST if request.method == "POST" else None
        form = TextDocumentForm(bound, initial=request.GET.dict())
        form.fields["knowledge_base"].queryset = self._bases(request)  # type: ignore[attr-defined]  # a ModelChoiceField
        if bound is not None and form.is_valid():
            data = form.cleaned_data
            try:
                added = knowledge_documents.document_add_text(
                    kb=data["knowledge_base"], title=data["title"], text=data["text"]
                )
            except services.KnowledgeError as exc:
                form.add_error("text", str(exc))
            else:
                messages.success(request, _("Documento añadido; se está indexando."))
                url = reverse("admin:ai_agents_document_change", args=[added.document.pk])
                return HttpResponseRedirect(url)
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]  # a mixin of ModelAdmin
            "title": _("Añadir documento de texto"),
            "form": form,
            "opts": Document._meta,
        }
        return TemplateResponse(request, "admin/ai_agents/document/add_text.html", context)
