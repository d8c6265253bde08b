from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from erp.llm.models import BudgetNotice, ChannelPrice, ModelPrice, UsageLog
from erp.llm.usage import price_cache_clear
from erp.tenancy.admin_base import ReadOnlyTenantOwnedAdmin


class GlobalPriceAdmin(admin.ModelAdmin):
    """Prices are global (every tenant is billed with them): only superusers edit them."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


@admin.register(ModelPrice)
class ModelPriceAdmin(GlobalPriceAdmin):
    list_display = ["provider", "model", "input_per_million_usd", "output_per_million_usd"]
    list_filter = ["provider"]
    search_fields = ["provider", "model"]

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        super().delete_queryset(request, queryset)
        price_cache_clear()


@admin.register(ChannelPrice)
class ChannelPriceAdmin(GlobalPriceAdmin):
    """The per-message channel rates (seed values are examples: check Meta's rate card)."""

    list_display = ["channel", "country", "category", "price_usd", "valid_from"]
    list_filter = ["channel", "category", "valid_from"]
    search_fields = ["country"]


@admin.register(BudgetNotice)
class BudgetNoticeAdmin(ReadOnlyTenantOwnedAdmin):
    """The budget notices sent to the owners (80 % and 100 % of the month)."""

    list_display = ["created_at", "month", "threshold", "spent_usd", "budget_usd"]
    list_filter = ["month", "threshold"]


@admin.register(UsageLog)
class UsageLogAdmin(ReadOnlyTenantOwnedAdmin):
    """The ledger is append-only: written by the gateway, never edited by hand."""

    list_display = [
        "created_at",
        "operation",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_ms",
        "success",
    ]
    list_filter = ["operation", "success", "provider"]
    search_fields = ["model", "error_message"]
    date_hierarchy = "created_at"
