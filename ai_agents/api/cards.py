"""The inbox card's fields of the conversation JSON (issue 16's contract): words instead of
codes, the contact, the tenant, the preview and the requesting member's unread count."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from ai_agents.models import Conversation, ConversationNote
from ai_agents.rules.escalation_labels import PRIORITY_LABELS, label
from ai_agents.rules.inbox_labels import channel_label, contact_display_name
from ai_agents.rules.whatsapp_window import window_label
from ai_agents.services.handoff import user_display_name


class CardFieldsMixin(serializers.Serializer):
    contact = serializers.SerializerMethodField()
    tenant = serializers.SerializerMethodField()
    channel_label = serializers.SerializerMethodField()
    status_label = serializers.SerializerMethodField()
    priority_label = serializers.SerializerMethodField()
    claimed_at = serializers.DateTimeField(read_only=True)
    last_message_preview = serializers.SerializerMethodField()
    unread_count = serializers.SerializerMethodField()
    window_label = serializers.SerializerMethodField()

    def get_contact(self, obj: Conversation) -> dict[str, Any]:
        """{"id", "display_name", "phone", "email"}: name, else phone, else e-mail, else
        "Visitante web N" (id null when the conversation has no contact)."""
        contact = obj.contact if obj.contact_id is not None else None
        return {
            "id": None if contact is None else str(contact.pk),
            "display_name": contact_display_name(contact, fallback_key=obj.pk),
            "phone": "" if contact is None else contact.phone,
            "email": "" if contact is None else contact.email,
        }

    def get_tenant(self, obj: Conversation) -> dict[str, Any]:
        """{"id", "name", "timezone"} of the conversation's tenant."""
        tenant = obj.tenant
        return {"id": tenant.pk, "name": tenant.name, "timezone": tenant.timezone}

    def get_channel_label(self, obj: Conversation) -> str:
        return channel_label(obj.channel)

    def get_status_label(self, obj: Conversation) -> str:
        return str(obj.get_status_display())

    def get_priority_label(self, obj: Conversation) -> str:
        return label(PRIORITY_LABELS, obj.escalation_priority) if obj.escalation_priority else ""

    def get_last_message_preview(self, obj: Conversation) -> str:
        """The start of the last customer or bot/staff message ("" when none)."""
        return str(getattr(obj, "last_message_preview", None) or "")

    def get_window_label(self, obj: Conversation) -> str:
        """WhatsApp's 24-hour window in words ("Ventana: 3 h 12 min", "Ventana cerrada — solo
        plantillas"); "" on other channels and on closed or expired conversations."""
        return window_label(obj)

    def get_unread_count(self, obj: Conversation) -> int | None:
        """Customer messages after the requesting member last opened it (null with an API
        key: no member)."""
        value = getattr(obj, "unread_count", None)
        return None if value is None else int(value)


def note_json(note: ConversationNote) -> dict[str, Any]:
    author = note.author
    return {
        "kind": "note",
        "id": str(note.pk),
        "text": note.text,
        "author": None if author is None else {"id": author.pk, "name": user_display_name(author)},
        "created_at": serializers.DateTimeField().to_representation(note.created_at),
    }


def conversation_notes_json(conversation: Conversation) -> list[dict[str, Any]]:
    notes = (
        ConversationNote.objects.for_tenant(conversation.tenant_id)
        .filter(conversation_id=conversation.pk)
        .select_related("author")
        .order_by("created_at", "id")
    )
    return [note_json(n) for n in notes]
