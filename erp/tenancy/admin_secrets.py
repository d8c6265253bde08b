"""Write-only secrets in the admin (access tokens, webhook secrets, HTTP tool headers).

A stored secret is rendered to nobody, owners included: not as an input's value, not as a
read-only field for the roles that only view, not echoed back after a form error. In its place
a badge says "configurado" / "sin configurar". Whoever may change the row types a new value to
replace it; an empty field keeps the stored one (the form's job: see `keep_secret`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _


class WriteOnlyTextarea(forms.Textarea):
    """A textarea that never renders a value (the multi-line sibling of
    `PasswordInput(render_value=False)`)."""

    write_only = True

    def format_value(self, value: Any) -> None:
        return None


class WriteOnlyInput(forms.PasswordInput):
    write_only = True

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"autocomplete": "new-password", **(attrs or {})}, render_value=False)


def secret_badge(is_set: bool, detail: str = "") -> SafeString:
    if not is_set:
        return format_html('<span class="secret-badge secret-unset">{}</span>', _("sin configurar"))
    suffix = format_html(' <span class="secret-detail">{}</span>', detail) if detail else ""
    return format_html(
        '<span class="secret-badge secret-set">{}</span>{}', _("configurado"), suffix
    )


def keep_secret(form: forms.ModelForm, name: str, *, clear: bool = False) -> str:
    """The value to store for a write-only field: the typed one, "" when cleared, else the
    stored one (the instance is not yet updated while the form cleans)."""
    typed = form.cleaned_data.get(name) or ""
    if clear:
        return ""
    return str(typed) if typed else str(getattr(form.instance, name) or "")


class SecretFieldsAdminMixin:
    """For a ModelAdmin: `secret_fields` are shown as a badge (`<name>_state`) and, to those
    who may change the row, as a write-only input beside it; `<name>_clear` companions are
    dropped for the others."""

    secret_fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.secret_fields:
            setattr(self, f"{name}_state", self._state_display(name))

    def _state_display(self, name: str) -> Callable[[Any], SafeString]:
        field = self.model._meta.get_field(name)  # type: ignore[attr-defined]  # a mixin of ModelAdmin

        def display(obj: Any) -> SafeString:
            value = getattr(obj, name, "") if obj is not None else ""
            return secret_badge(bool(value), self.secret_detail(name, obj) if value else "")

        display.short_description = field.verbose_name  # type: ignore[attr-defined]  # Django admin reads it
        return display

    def secret_detail(self, name: str, obj: Any) -> str:
        """What may be said about a set secret without revealing it (e.g. header names)."""
        return ""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))  # type: ignore[misc]  # a mixin of ModelAdmin
        return fields + [f"{name}_state" for name in self.secret_fields]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)  # type: ignore[misc]  # a mixin of ModelAdmin
        if obj is None:
            writable = self.has_add_permission(request)  # type: ignore[attr-defined]  # a mixin of ModelAdmin
        else:
            writable = self.has_change_permission(request, obj)  # type: ignore[attr-defined]  # a mixin of ModelAdmin
        states = {f"{name}_state" for name in self.secret_fields}
        companions = {f"{name}_clear" for name in self.secret_fields}
        present = {f for _title, options in fieldsets for f in options["fields"]}
        result = []
        for title, options in fieldsets:
            fields: list[str] = []
            for field in options["fields"]:
                if field in states or field in companions:
                    continue  # placed beside their secret
                if field not in self.secret_fields:
                    fields.append(field)
                    continue
                fields.append(f"{field}_state")
                if writable:
                    fields.append(field)
                    fields += [f"{field}_clear"] if f"{field}_clear" in present else []
            result.append((title, {**options, "fields": fields}))
        return result
