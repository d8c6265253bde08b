"""Base classes for tenant-scoped API views."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.views import APIView

from erp.tenancy.models import Tenant
from erp.tenancy.scoping import reset_scope, set_scope


class TenantScopedMixin:
    """After authentication, every query in the view runs scoped to `request.tenant`."""

    request: Request

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        tenant = self.tenant
        self._scope_token = set_scope(frozenset({tenant.pk}))

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # An exception DRF does not handle skips `finalize_response`: the scope must not
        # outlive the request (the thread serves another tenant's request next).
        try:
            return super().dispatch(request, *args, **kwargs)  # type: ignore[misc,no-any-return]
        finally:
            token = getattr(self, "_scope_token", None)
            if token is not None:
                reset_scope(token)
                self._scope_token = None

    def finalize_response(
        self, request: Request, response: Any, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        token = getattr(self, "_scope_token", None)
        if token is not None:
            reset_scope(token)
            self._scope_token = None
        return super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc,no-any-return]

    @property
    def tenant(self) -> Tenant:
        return self.request._request.tenant  # type: ignore[attr-defined,no-any-return]


class TenantAPIView(TenantScopedMixin, APIView):
    pass


class TenantGenericAPIView(TenantScopedMixin, generics.GenericAPIView):  # type: ignore[type-arg]
    pass
