"""DRF authentication: `Authorization: Bearer <api key>` for integrations, session for staff.

Both set `request.tenant`; a session may pick among its memberships with `X-Tenant: <slug>`.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from erp.tenancy.models import ApiKey, Membership, Tenant
from erp.tenancy.selectors import membership_for
from erp.tenancy.services import apikey_authenticate


class ApiKeyPrincipal:
    """The `request.user` of a request authenticated by API key."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    is_anonymous = False

    def __init__(self, api_key: ApiKey) -> None:
        self.api_key = api_key
        self.tenant: Tenant = api_key.tenant
        self.pk = None
        self.id = None

    def __str__(self) -> str:
        return f"apikey:{self.api_key.prefix}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _sep, key = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        key = key.strip()
        if not key:
            raise exceptions.AuthenticationFailed(_("Falta la clave de API."))
        api_key = apikey_authenticate(key=key)
        if api_key is None:
            raise exceptions.AuthenticationFailed(_("Clave de API no válida o revocada."))
        request._request.tenant = api_key.tenant  # type: ignore[attr-defined]  # read by TenantScopedMixin
        request._request.membership = None  # type: ignore[attr-defined]  # read by the permissions
        return ApiKeyPrincipal(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """A logged-in staff member acting for one of the tenants they belong to."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        result = super().authenticate(request)
        if result is None:
            return None
        user, _auth = result
        if not user.is_staff:
            return None
        membership: Membership | None = membership_for(user, request.headers.get("X-Tenant"))
        request._request.tenant = membership.tenant if membership else None  # type: ignore[attr-defined]  # read by TenantScopedMixin
        request._request.membership = membership  # type: ignore[attr-defined]  # read by the permissions
        return user, None
