"""Conversation reads: GET /api/v1/conversations?status=, GET /api/v1/conversations/{id}."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import exceptions, mixins, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.models import Conversation, Message
from ai_agents.rules.delivery_labels import delivery_error_label, delivery_status_label
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.services.handoff import (
    claim_is_valid,
    conversation_waiting_since,
    conversations_annotate_waiting,
    user_display_name,
)
from ai_agents.services.typing import customer_typing
from erp.api.views import TenantGenericAPIView
from erp.tenancy.permissions import HasTenant
from erp.tenancy.selectors import access_tenant_object


class ConversationSerializer(serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    contact = serializers.UUIDField(source="contact_id", read_only=True)
    assigned_to = serializers.SerializerMethodField()
    escalated_to = serializers.SerializerMethodField()
    previous_conversation = serializers.UUIDField(
        source="previous_conversation_id", read_only=True, allow_null=True
    )
    claim_expires_at = serializers.SerializerMethodField()
    claimed = serializers.SerializerMethodField()
    waiting_since = serializers.SerializerMethodField()
    escalation = serializers.SerializerMethodField()

    def get_assigned_to(self, obj: Conversation) -> dict[str, Any] | None:
        """Who handles it (the holder, or who closed it); null when nobody."""
        if obj.assigned_to_id is None:
            return None
        return {"id": obj.assigned_to_id, "name": user_display_name(obj.assigned_to)}

    def get_escalated_to(self, obj: Conversation) -> dict[str, Any] | None:
        """The staff member the escalation went to (who claimed it last); null when nobody."""
        if obj.escalated_to_id is None:
            return None
        return {"id": obj.escalated_to_id, "name": user_display_name(obj.escalated_to)}

    def get_claim_expires_at(self, obj: Conversation) -> str | None:
        value = obj.claim_expires_at
        return None if value is None else serializers.DateTimeField().to_representation(value)

    def get_claimed(self, obj: Conversation) -> bool:
        """A person holds it under a lease that still runs (false: unclaimed or expired)."""
        return claim_is_valid(obj)

    def get_waiting_since(self, obj: Conversation) -> str | None:
        value = conversation_waiting_since(obj)
        return None if value is None else serializers.DateTimeField().to_representation(value)

    def get_escalation(self, obj: Conversation) -> dict[str, Any] | None:
        """Why it was escalated, in words (labels in the request's language); null if never."""
        return conversation_escalation(obj)

    class Meta:
        model = Conversation
        fields = [
            "id",
            "agent",
            "channel",
            "channel_conversation_id",
            "contact",
            "contact_identifier",
            "status",
            "escalated_at",
            "escalation_reason",
            "escalation_priority",
            "escalation",
            "escalated_to",
            "assigned_to",
            "claim_expires_at",
            "claimed",
            "waiting_since",
            "previous_conversation",
            "satisfaction_rating",
            "feedback_text",
            "session_variables",
            "message_count",
            "tokens_used",
            "started_at",
            "last_message_at",
            "closed_at",
        ]
        read_only_fields = fields


class MessageSerializer(serializers.ModelSerializer):
    author = serializers.SerializerMethodField()
    delivery_status_label = serializers.SerializerMethodField()
    delivery_error = serializers.SerializerMethodField()

    def get_delivery_status_label(self, obj: Message) -> str:
        """The delivery status in words ("" for inbound messages and REST replies)."""
        return delivery_status_label(obj.delivery_status)

    def get_delivery_error(self, obj: Message) -> str | None:
        """Why it was not delivered, in words; null unless the status is failed."""
        if obj.delivery_status != "failed":
            return None
        codes = [d.error_code for d in obj.deliveries.all() if d.status == "failed"]
        if not codes:
            codes = [str(((obj.metadata or {}).get("delivery_error") or {}).get("code") or "")]
        return delivery_error_label(codes[0])

    def get_author(self, obj: Message) -> dict[str, Any] | None:
        """The staff member who wrote it (human handoff); null for the customer and the bot."""
        if obj.author_id is None:
            return None
        return {"id": obj.author_id, "name": user_display_name(obj.author)}

    class Meta:
        model = Message
        fields = [
            "id",
            "role",
            "content",
            "input_tokens",
            "output_tokens",
            "rag_chunks_used",
            "rag_search_time_ms",
            "tool_calls",
            "metadata",
            "channel_message_id",
            "author",
            "delivery_status",
            "delivery_status_label",
            "delivery_error",
            "created_at",
        ]
        read_only_fields = fields


class ConversationListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [HasTenant]
    serializer_class = ConversationSerializer

    def get_queryset(self) -> Any:
        rows = conversations_annotate_waiting(
            Conversation.objects.for_tenant(self.tenant).select_related(
                "assigned_to", "escalated_to"
            )
        ).order_by("-last_message_at", "id")
        wanted = self.request.query_params.get("status")
        if wanted:
            if wanted not in Conversation.Status.values:
                raise exceptions.ValidationError(
                    {"status": [_("Estado no válido: %(s)s") % {"s": wanted}]}
                )
            rows = rows.filter(status=wanted)
        return rows

    def get(self, request: Request) -> Response:
        return self.list(request)


class ConversationDetailView(TenantGenericAPIView):
    permission_classes = [HasTenant]
    serializer_class = ConversationSerializer

    def get(self, request: Request, conversation_id: Any) -> Response:
        conversation = access_tenant_object(Conversation, self.tenant, conversation_id)
        return Response(conversation_body(conversation))


def conversation_body(conversation: Conversation) -> dict[str, Any]:
    """The conversation JSON with its messages (detail, and the handoff actions' answer)."""
    body = dict(ConversationSerializer(conversation).data)
    messages = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation)
        .select_related("author")
        .prefetch_related("deliveries")
    )
    # The web chat visitor is typing now (a few seconds' TTL; see ai_agents.services.typing).
    body["customer_typing"] = customer_typing(conversation.pk)
    body["messages"] = MessageSerializer(messages.order_by("created_at", "id"), many=True).data
    return body
