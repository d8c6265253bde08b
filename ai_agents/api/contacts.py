"""`GET /api/v1/contacts/{id}`: the contact and its conversations across channels (cards,
latest activity first, at most CONTACT_CONVERSATIONS_MAX)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.conversations import ConversationSerializer
from ai_agents.api.member import MemberAPIView
from ai_agents.models import Contact, Conversation
from ai_agents.rules.inbox_labels import contact_display_name
from ai_agents.selectors.conversations import cards_annotate

CONTACT_CONVERSATIONS_MAX = 200


class ContactDetailView(MemberAPIView):
    @extend_schema(responses=dict)
    def get(self, request: Request, contact_id: Any) -> Response:
        contact = self.member_object(Contact, contact_id, Contact.objects.select_related("tenant"))
        user = self.member_user
        rows = cards_annotate(
            Conversation.objects.for_tenant(contact.tenant_id)
            .filter(contact_id=contact.pk)
            .select_related("assigned_to", "escalated_to", "contact", "tenant"),
            user_id=getattr(user, "pk", None),
        ).order_by("-last_message_at", "-id")
        conversations = list(rows[: CONTACT_CONVERSATIONS_MAX + 1])
        date = serializers.DateTimeField()
        return Response(
            {
                "id": str(contact.pk),
                "display_name": contact_display_name(contact, fallback_key=contact.pk),
                "name": contact.name,
                "phone": contact.phone,
                "email": contact.email,
                "external_id": contact.external_id,
                "tenant": {"id": contact.tenant_id, "name": contact.tenant.name},
                "created_at": date.to_representation(contact.created_at),
                "conversations": ConversationSerializer(
                    conversations[:CONTACT_CONVERSATIONS_MAX], many=True
                ).data,
                "more_conversations": len(conversations) > CONTACT_CONVERSATIONS_MAX,
            }
        )
