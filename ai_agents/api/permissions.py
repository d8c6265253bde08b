from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import permissions
from rest_framework.request import Request

from erp.tenancy.permissions import HasTenant


class CanEditKnowledge(HasTenant):
    """Reads for any member or API key; writes for API keys and owner/admin staff."""

    message = _("Solo el propietario o un administrador de la empresa puede hacer esto.")

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        membership = getattr(request._request, "membership", None)
        return membership is None or bool(membership.can_manage)  # None: an API key
