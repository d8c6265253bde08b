"""Admin for tenant-owned models: every right is decided by the member's role in the *object's*
tenant, never by "manages some tenant".

Roles come from the membership, not from Django's per-model permissions: owner and admin write
their tenant's rows, agents only view them; superusers act on every tenant. A user may hold
several memberships with different roles, so each check names a tenant:

- object pages (view, change, delete, history, inlines, the admin's own views): the role in
  `obj`'s tenant (`role_in`); a row of a tenant the user does not belong to is a 404, never a
  redirect or a 403 that would confirm it exists;
- pages without an object (changelist, add): the right in at least one tenant, and then the
  form offers only tenants (and related rows) where the user has it, and `save_model`
  re-checks the tenant the row ends up in;
- actions: declared with `@admin.action(permissions=[...])` (undeclared counts as "change") and
  re-checked on every selected row: one row the user may not touch refuses the whole action;
- autocomplete feeds write forms, so it offers only rows of tenants the user writes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from erp.tenancy.models import Membership, Tenant, TenantOwnedModel
from erp.tenancy.selectors import user_memberships

WRITE_ROLES = frozenset({Membership.Role.OWNER, Membership.Role.ADMIN})


def tenant_roles(request: HttpRequest) -> dict[int, str]:
    """{tenant id: role} of the request's user (cached on the request)."""
    if not request.user.is_authenticated:
        return {}
    cached = getattr(request, "_tenant_roles", None)
    if cached is None:
        cached = {m.tenant_id: str(m.role) for m in user_memberships(request.user)}
        request._tenant_roles = cached  # type: ignore[attr-defined]  # a per-request cache
    return cached


def role_in(request: HttpRequest, tenant_id: int | None) -> str | None:
    """The user's role in that tenant, None if not a member."""
    return tenant_roles(request).get(tenant_id) if tenant_id is not None else None


def member_tenant_ids(request: HttpRequest) -> list[int]:
    return list(tenant_roles(request))


def managed_tenant_ids(request: HttpRequest) -> list[int]:
    """Tenants where the user writes (owner or admin)."""
    return [tid for tid, role in tenant_roles(request).items() if role in WRITE_ROLES]


def owned_tenant_ids(request: HttpRequest) -> list[int]:
    return [tid for tid, role in tenant_roles(request).items() if role == Membership.Role.OWNER]


def tenant_id_of(obj: Any) -> int | None:
    return obj.pk if isinstance(obj, Tenant) else getattr(obj, "tenant_id", None)


def _is_autocomplete(request: HttpRequest) -> bool:
    match = getattr(request, "resolver_match", None)
    return bool(match and match.url_name == "autocomplete")


class TenantAdminMixin:
    """Per-tenant role checks for a ModelAdmin or an inline (whose `obj` is the parent row, so
    an inline follows its parent's rule)."""

    # The lookup that names a row's tenant in queries ("pk" for the Tenant admin itself).
    tenant_lookup = "tenant_id"

    def can_write(self, request: HttpRequest, obj: Any = None) -> bool:
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(managed_tenant_ids(request))
        return role_in(request, tenant_id_of(obj)) in WRITE_ROLES

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser or member_tenant_ids(request))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(member_tenant_ids(request))
        return role_in(request, tenant_id_of(obj)) is not None

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self.can_write(request, args[0] if args else None)  # inlines get the parent

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.can_write(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.can_write(request, obj)

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> Any:
        raise Http404

    # --- pages of one object: 404 before any permission answer ---------------------------

    def _object_or_404(self, request: HttpRequest, object_id: str) -> None:
        if self.get_object(request, unquote(object_id)) is None:  # type: ignore[attr-defined]  # a mixin of ModelAdmin
            raise Http404

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        if object_id is not None:
            self._object_or_404(request, object_id)
        return super().changeform_view(request, object_id, form_url, extra_context)  # type: ignore[misc]  # a mixin of ModelAdmin

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        self._object_or_404(request, object_id)
        return super().delete_view(request, object_id, extra_context)  # type: ignore[misc]  # a mixin of ModelAdmin

    # --- actions: declared permission, re-checked on each selected row -------------------

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)  # type: ignore[misc]  # a mixin of ModelAdmin
        return {
            name: (self._guarded_action(func), name, description)
            for name, (func, _name, description) in actions.items()
        }

    @staticmethod
    def _guarded_action(func: Callable[..., Any]) -> Callable[..., Any]:
        permissions = getattr(func, "allowed_permissions", None) or ("change",)

        @functools.wraps(func)
        def action(modeladmin: Any, request: HttpRequest, queryset: Any) -> Any:
            checks = [getattr(modeladmin, f"has_{p}_permission") for p in permissions]
            refused = sum(1 for obj in queryset if not any(check(request, obj) for check in checks))
            if refused:
                modeladmin.message_user(
                    request,
                    _(
                        "No tiene permiso para esta acción en %(count)s de los elementos "
                        "seleccionados. No se ha cambiado nada."
                    )
                    % {"count": refused},
                    messages.ERROR,
                )
                return None
            return func(modeladmin, request, queryset)

        return action

    # --- autocomplete feeds write forms: rows of tenants the user writes -------------------

    def get_search_results(
        self, request: HttpRequest, queryset: models.QuerySet[Any], search_term: str
    ) -> tuple[models.QuerySet[Any], bool]:
        if _is_autocomplete(request) and not request.user.is_superuser:
            queryset = queryset.filter(**{f"{self.tenant_lookup}__in": managed_tenant_ids(request)})
        return super().get_search_results(request, queryset, search_term)  # type: ignore[misc]  # a mixin of ModelAdmin


class TenantFormMixin:
    """The admin form of a tenant-owned row. Related rows (foreign keys, many-to-many) must
    belong to the row's tenant. When the tenant is not a field (set from the single tenant the
    user writes, or read-only on change), uniqueness is still checked within the tenant, so a
    duplicate is a form error instead of an IntegrityError (500)."""

    only_tenant_id: int | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        instance = self.instance  # type: ignore[attr-defined]  # a mixin of ModelForm
        if not instance.tenant_id and self.only_tenant_id is not None:
            instance.tenant_id = self.only_tenant_id

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()  # type: ignore[misc]  # a mixin of ModelForm
        tenant = data.get("tenant")
        tenant_id = tenant.pk if isinstance(tenant, Tenant) else self.instance.tenant_id  # type: ignore[attr-defined]  # a mixin of ModelForm
        if tenant_id is None:
            return data
        for name, value in list(data.items()):  # add_error drops the field from data
            related = value if isinstance(value, list | tuple | models.QuerySet) else [value]
            if any(
                isinstance(row, TenantOwnedModel) and row.tenant_id != tenant_id for row in related
            ):
                self.add_error(name, _("Pertenece a otra empresa."))  # type: ignore[attr-defined]  # a mixin of ModelForm
        return data

    def _get_validation_exclusions(self) -> set[str]:
        exclude: set[str] = super()._get_validation_exclusions()  # type: ignore[misc]  # a mixin of ModelForm
        if self.instance.tenant_id:  # type: ignore[attr-defined]  # a mixin of ModelForm
            exclude.discard("tenant")
        return exclude

    def _update_errors(self, errors: ValidationError) -> None:
        # An error on a field the form does not show (the tenant) is reported for the form.
        fields = self.fields  # type: ignore[attr-defined]  # a mixin of ModelForm
        if hasattr(errors, "error_dict") and any(name not in fields for name in errors.error_dict):
            moved: dict[str, list[Any]] = {}
            for name, messages_ in errors.error_dict.items():
                key = name if name in fields else NON_FIELD_ERRORS
                moved.setdefault(key, []).extend(messages_)
            errors = ValidationError(moved)
        super()._update_errors(errors)  # type: ignore[misc]  # a mixin of ModelForm


class TenantOwnedAdmin(TenantAdminMixin, admin.ModelAdmin):
    """ModelAdmin for a `TenantOwnedModel`."""

    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Any]:
        queryset = self.model.objects.unscoped()
        if request.user.is_superuser:
            return queryset
        return queryset.filter(tenant_id__in=member_tenant_ids(request))

    def get_list_display(self, request: HttpRequest) -> Any:
        fields = list(super().get_list_display(request))
        if request.user.is_superuser and "tenant" not in fields:
            fields.append("tenant")
        return fields

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = list(super().get_list_filter(request))
        if request.user.is_superuser and "tenant" not in filters:
            filters.append("tenant")
        return filters

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        exclude = list(super().get_exclude(request, obj) or [])
        if not request.user.is_superuser and obj is None and len(managed_tenant_ids(request)) <= 1:
            exclude.append("tenant")  # set from the membership on save
        return exclude

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser and obj is not None and "tenant" not in fields:
            fields.append("tenant")  # a row never moves to another tenant (its children stay)
        return fields

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        allowed = [] if request.user.is_superuser else managed_tenant_ids(request)
        return type(
            form.__name__,
            (TenantFormMixin, form),
            {"only_tenant_id": allowed[0] if len(allowed) == 1 else None},
        )

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser:
            allowed = managed_tenant_ids(request)
            if related is Tenant:
                kwargs["queryset"] = Tenant.objects.filter(pk__in=allowed)
            elif related is get_user_model():
                # Accounts of other tenants are not listed (their e-mails are personal data).
                kwargs["queryset"] = related.objects.filter(
                    memberships__tenant_id__in=allowed
                ).distinct()
            elif hasattr(related, "objects") and hasattr(related.objects, "for_tenant"):
                kwargs["queryset"] = related.objects.unscoped().filter(tenant_id__in=allowed)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser and hasattr(related.objects, "for_tenant"):
            kwargs["queryset"] = related.objects.unscoped().filter(
                tenant_id__in=managed_tenant_ids(request)
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.check_target_tenant(request, obj, change)
        super().save_model(request, obj, form, change)

    def check_target_tenant(self, request: HttpRequest, obj: Any, change: bool) -> None:
        """The row is written only in a tenant where the user writes, and stays in its tenant
        (list_editable and custom forms included); sets the tenant when there is one choice."""
        if request.user.is_superuser:
            return
        allowed = managed_tenant_ids(request)
        if not obj.tenant_id and len(allowed) == 1:
            obj.tenant_id = allowed[0]
        if change:
            stored = self.model.objects.unscoped().filter(pk=obj.pk)
            if list(stored.values_list("tenant_id", flat=True)) != [obj.tenant_id]:
                raise PermissionDenied
        if not self.has_change_permission(request, obj) or obj.tenant_id not in allowed:
            raise PermissionDenied


class ReadOnlyTenantOwnedAdmin(TenantOwnedAdmin):
    """A tenant-scoped record written by the system (ledgers, telemetry): viewable only."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


__all__ = [
    "Membership",
    "ReadOnlyTenantOwnedAdmin",
    "TenantAdminMixin",
    "TenantOwnedAdmin",
    "managed_tenant_ids",
    "member_tenant_ids",
    "owned_tenant_ids",
    "role_in",
    "tenant_id_of",
]
