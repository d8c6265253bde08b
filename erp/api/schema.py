"""OpenAPI (drf-spectacular) descriptions of our authentication schemes, and the error body
every endpoint answers with. Imported by `erp.tenancy`'s app config, so the schema knows them."""

from __future__ import annotations

import functools
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "erp.tenancy.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A tenant's API key: `Authorization: Bearer <key>`.",
        }


class StaffSessionScheme(OpenApiAuthenticationExtension):
    target_class = "erp.tenancy.authentication.StaffSessionAuthentication"
    name = "staffSession"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": (
                "A staff member's Django session (log in at /admin/); unsafe methods also need "
                "the `X-CSRFToken` header. `X-Tenant: <slug>` picks the tenant when the user "
                "belongs to several."
            ),
        }


@functools.cache
def error_serializer() -> serializers.Serializer:
    """`{"error": {"code", "message", ...}}`: the body of every 4xx/5xx answer (one instance:
    the schema names a component once)."""
    return inline_serializer(
        "ErrorBody",
        {
            "error": inline_serializer(
                "Error",
                {
                    "code": serializers.CharField(),
                    "message": serializers.CharField(),
                    "field": serializers.CharField(required=False),
                    "retry_after": serializers.IntegerField(required=False),
                },
            )
        },
    )
