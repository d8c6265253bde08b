"""Base classes for tenant-scoped API views."""

from __future__ import annotations

from contextvars import Token
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from erp.tenancy.models import Tenant
from erp.tenancy.scoping import Scope, reset_scope, set_scope


class TenantScopedMixin(APIView):
    """After authentication, every query in the view runs scoped to `request.tenant`."""

    _scope_token: Token[Scope | None] | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        tenant = self.tenant
        self._scope_token = set_scope(frozenset({tenant.pk}))

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # An exception DRF does not handle skips `finalize_response`: the scope must not
        # outlive the request (the thread serves another tenant's request next).
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            token = self._scope_token
            if token is not None:
                reset_scope(token)
                self._scope_token = None

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        token = self._scope_token
        if token is not None:
            reset_scope(token)
            self._scope_token = None
        return super().finalize_response(request, response, *args, **kwargs)

    @property
    def tenant(self) -> Tenant:
        return self.request._request.tenant  # type: ignore[attr-defined]  # set by the authentication


class TenantAPIView(TenantScopedMixin, APIView):
    pass


class TenantGenericAPIView(TenantScopedMixin, generics.GenericAPIView):
    pass
