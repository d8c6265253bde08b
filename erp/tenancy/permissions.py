from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, permissions
from rest_framework.request import Request


class HasTenant(permissions.BasePermission):
    """Authenticated, and acting for an active tenant."""

    message = _("Este usuario no pertenece a ninguna empresa activa.")

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.user is None or not request.user.is_authenticated:
            raise exceptions.NotAuthenticated(_("Falta la autenticación: use una clave de API."))
        tenant = getattr(request._request, "tenant", None)
        return tenant is not None and tenant.is_active


class IsTenantManager(HasTenant):
    """Staff owner/admin of the tenant (not an API key, not an agent)."""

    message = _("Solo el propietario o un administrador de la empresa puede hacer esto.")

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        membership = getattr(request._request, "membership", None)
        return membership is not None and membership.can_manage
