"""Conversation reads: GET /api/v1/conversations?status=, GET /api/v1/conversations/{id}."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions, mixins, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.models import Conversation, Message
from erp.api.views import TenantGenericAPIView
from erp.tenancy.permissions import HasTenant
from erp.tenancy.selectors import access_tenant_object


class ConversationSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    contact = serializers.UUIDField(source="contact_id", read_only=True)

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
            "session_variables",
            "message_count",
            "tokens_used",
            "started_at",
            "last_message_at",
            "closed_at",
        ]
        read_only_fields = fields


class MessageSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
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
            "created_at",
        ]
        read_only_fields = fields


class ConversationListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [HasTenant]
    serializer_class = ConversationSerializer

    def get_queryset(self) -> Any:
        rows = Conversation.objects.for_tenant(self.tenant).order_by("-last_message_at", "id")
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
        try:
            uuid.UUID(str(conversation_id))
        except ValueError:
            raise Http404 from None
        conversation = access_tenant_object(Conversation, self.tenant, conversation_id)
        body = ConversationSerializer(conversation).data
        messages = Message.objects.for_tenant(self.tenant).filter(conversation=conversation)
        body["messages"] = MessageSerializer(messages.order_by("created_at", "id"), many=True).data
        return Response(body)
