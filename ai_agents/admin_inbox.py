"""Admin: the tenant's canned replies (the same rules as the API: shortcut, known variables)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from ai_agents.models import CannedReply
from ai_agents.services import canned_replies as service
from erp.tenancy.admin_base import TenantOwnedAdmin


class CannedReplyForm(forms.ModelForm):
    class Meta:
        model = CannedReply
        fields = ["tenant", "shortcut", "title", "text"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            shortcut, title, text = service.canned_reply_clean(
                data.get("shortcut"), data.get("title"), data.get("text")
            )
        except service.CannedReplyInvalid as error:
            self.add_error(error.field if error.field in self.fields else None, error.message)
            return data
        data.update(shortcut=shortcut, title=title, text=text)
        return data


@admin.register(CannedReply)
class CannedReplyAdmin(TenantOwnedAdmin):
    form = CannedReplyForm
    list_display = ["shortcut", "title", "updated_at"]
    search_fields = ["shortcut", "title", "text"]
    ordering = ["shortcut"]
