"""The three ways to add documents on a knowledge base's admin page: upload files, import a
URL, paste a text. Each is its own `<form>` placed after the change form (a form nested in the
change form is dropped by browsers), posts here, and comes back to the page with a message per
document; bad input is a message on the page, never an error page."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ai_agents.models import KnowledgeBase
from ai_agents.services import knowledge as services
from ai_agents.services import knowledge_documents


class UrlImportForm(forms.Form):
    url = forms.URLField(
        label=gettext_lazy("Dirección (URL)"), max_length=2000, assume_scheme="https"
    )
    title = forms.CharField(label=gettext_lazy("Título (opcional)"), max_length=300, required=False)


class PasteTextForm(forms.Form):
    title = forms.CharField(label=gettext_lazy("Título"), max_length=300)
    text = forms.CharField(label=gettext_lazy("Texto"), strip=False, widget=forms.Textarea)


def _report(request: HttpRequest, name: str, added: knowledge_documents.DocumentAdded) -> None:
    if added.created:
        messages.success(request, _("%(name)s: en cola.") % {"name": name})
    else:
        messages.info(request, _("%(name)s: ya estaba en la base.") % {"name": name})


def _form_errors(request: HttpRequest, form: forms.Form) -> None:
    for field, errors in form.errors.items():
        label = form.fields[field].label if field in form.fields else ""
        for error in errors:
            messages.error(request, f"{label}: {error}" if label else str(error))


def kb_upload(request: HttpRequest, kb: KnowledgeBase) -> None:
    files = request.FILES.getlist("files")
    if not files:
        messages.error(request, _("Elija al menos un archivo."))
    for upload in files:
        try:
            added = knowledge_documents.document_add(
                kb=kb,
                data=upload.read(),
                filename=upload.name or "",
                mime_type=upload.content_type,
            )
        except services.KnowledgeError as exc:
            messages.error(request, f"{upload.name}: {exc}")
            continue
        _report(request, upload.name or "", added)


def kb_import_url(request: HttpRequest, kb: KnowledgeBase) -> None:
    form = UrlImportForm(request.POST)
    if not form.is_valid():
        _form_errors(request, form)
        return
    url = form.cleaned_data["url"]
    try:
        added = knowledge_documents.document_add_from_url(
            kb=kb, url=url, title=form.cleaned_data["title"]
        )
    except services.KnowledgeError as exc:
        messages.error(request, f"{url}: {exc}")
        return
    _report(request, added.document.title, added)


def kb_paste_text(request: HttpRequest, kb: KnowledgeBase) -> None:
    form = PasteTextForm(request.POST)
    if not form.is_valid():
        _form_errors(request, form)
        return
    title = form.cleaned_data["title"]
    try:
        added = knowledge_documents.document_add_text(
            kb=kb, title=title, text=form.cleaned_data["text"]
        )
    except services.KnowledgeError as exc:
        messages.error(request, f"{title}: {exc}")
        return
    _report(request, title, added)


SOURCES = {"upload": kb_upload, "url": kb_import_url, "text": kb_paste_text}
