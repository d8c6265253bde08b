"""Read-only admin for digests and ask telemetry.

Both hold personal mailbox data (senders, subjects, questions), so a staff member sees only
their own rows, whatever their role in the tenant; superusers see every row.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from correo.models import ChatQuery, Digest
from erp.tenancy.admin_base import ReadOnlyTenantOwnedAdmin


class OwnRowsReadOnlyAdmin(ReadOnlyTenantOwnedAdmin):
    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Any]:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(owner=request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


@admin.register(Digest)
class DigestAdmin(OwnRowsReadOnlyAdmin):
    list_display = ["generated_at", "owner", "resumen", "ruido_count"]
    date_hierarchy = "generated_at"


@admin.register(ChatQuery)
class ChatQueryAdmin(OwnRowsReadOnlyAdmin):
    list_display = ["created_at", "owner", "question", "tool_rounds", "duration_ms"]
    date_hierarchy = "created_at"
