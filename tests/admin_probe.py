"""Helpers of the admin-rights tests: the registered admins, URLs, a snapshot of every row,
and the POST data of a change form as its page rendered it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.urls import reverse

from erp.tenancy.models import Tenant, TenantOwnedModel
from tests.admin_rows import BUILDERS

STANDARD_URLS = {"changelist", "add", "history", "delete", "change", "autocomplete"}


def tenant_admins() -> list[tuple[type[models.Model], Any]]:
    """Every registered admin of a tenant-owned model (and of Tenant itself)."""
    found = [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if model is Tenant or issubclass(model, TenantOwnedModel)
    ]
    return sorted(found, key=lambda item: item[0]._meta.label)


def url(model: type[models.Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _manager(model: type[models.Model]) -> Any:
    manager = model._default_manager
    return manager.unscoped() if hasattr(manager, "unscoped") else manager


def snapshot(tenant_id: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every column of every row of every admin-registered tenant model (one tenant's rows
    when `tenant_id` is given)."""
    result = {}
    for model in BUILDERS:
        queryset = _manager(model).order_by("pk")
        if tenant_id is not None:
            queryset = queryset.filter(**{"pk" if model is Tenant else "tenant_id": tenant_id})
        result[model._meta.label] = list(queryset.values())
    return result


def _post_value(bound: Any) -> Any:
    value = bound.value()
    widget = bound.field.widget
    if getattr(widget, "write_only", False) or getattr(widget, "render_value", True) is False:
        return ""  # a write-only input comes back empty
    if isinstance(widget, forms.CheckboxInput):
        return "on" if value else None
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


def form_data(response: Any) -> dict[str, Any]:
    """What the browser would post back from a rendered admin change form, unchanged."""
    data: dict[str, Any] = {}
    forms_on_page = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for name, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{name}"] = str(value)
        forms_on_page.extend(formset.forms)
    for form in forms_on_page:
        for bound in form:
            value = _post_value(bound)
            if value is not None:
                data[bound.html_name] = value
    data["_save"] = "Guardar"
    return data


# A real value for the other parts of an admin view's URL (the knowledge base's sources).
URL_SAMPLES = {"source": "text"}


def custom_object_urls(model_admin: Any, pk: Any) -> list[str]:
    """The admin's own views on one object (upload, status, ...), beyond Django's."""
    prefix = f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_"
    patterns = [
        pattern
        for pattern in model_admin.get_urls()
        if getattr(pattern, "name", None)
        and "object_id" in str(pattern.pattern)
        and pattern.name.removeprefix(prefix) not in STANDARD_URLS
    ]
    return [
        reverse(
            f"admin:{pattern.name}",
            kwargs={
                "object_id": pk,
                **{k: URL_SAMPLES[k] for k in pattern.pattern.converters if k != "object_id"},
            },
        )
        for pattern in patterns
    ]


def autocomplete_sources(target: type[models.Model]) -> list[tuple[type[models.Model], str]]:
    """(model, field) pairs of registered models whose relation points at `target`."""
    sources = []
    for model in admin.site._registry:
        for field in model._meta.get_fields():
            if (
                field.concrete
                and field.is_relation
                and field.related_model is target
                and (field.many_to_one or field.many_to_many or field.one_to_one)
            ):
                sources.append((model, field.name))
    return sources
