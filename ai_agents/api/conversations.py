"""Conversation reads: GET /api/v1/conversations (filters, tabs, search; the inbox cards) and
GET /api/v1/conversations/{id} (the card, its messages and internal notes).

A staff session sees the conversations of every tenant it belongs to (each card names its
tenant; `X-Tenant` or `tenant=` narrows it to one); an API key those of its tenant."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.cards import CardFieldsMixin, conversation_notes_json
from ai_agents.api.member import MemberAPIView, StaffInputError
from ai_agents.models import Conversation, Message
from ai_agents.rules.delivery_labels import (
    delivery_error_label,
    delivery_status_label,
    failure_code,
)
from ai_agents.rules.escalation_labels import conversation_escalation
from ai_agents.rules.whatsapp_window import window_closes_at
from ai_agents.selectors.conversations import (
    FilterError,
    cards_annotate,
    conversation_filters_parse,
    conversation_list,
    conversation_ordering,
)
from ai_agents.services.handoff import (
    claim_is_valid,
    conversation_waiting_since,
    user_display_name,
)
from ai_agents.services.inbox import conversation_read_mark
from ai_agents.services.typing import customer_typing
from erp.llm.selectors import conversation_costs

LIST_PARAMETERS = [
    OpenApiParameter(name, str, description=text)
    for name, text in (
        ("tab", "waiting | mine | unassigned | bot | closed"),
        ("status", "active | escalated | closed | expired"),
        ("channel", "whatsapp | webchat | email | api"),
        ("agent", "agent id"),
        ("assigned", "me | none | <user id>"),
        ("contact", "contact id"),
        ("q", "search: message text, contact name, phone digits, e-mail"),
        ("from", "YYYY-MM-DD or ISO date-time"),
        ("to", "YYYY-MM-DD or ISO date-time"),
        ("tenant", "tenant id (a member of several)"),
    )
]


class ConversationSerializer(CardFieldsMixin, serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    assigned_to = serializers.SerializerMethodField()
    escalated_to = serializers.SerializerMethodField()
    previous_conversation = serializers.UUIDField(
        source="previous_conversation_id", read_only=True, allow_null=True
    )
    claim_expires_at = serializers.SerializerMethodField()
    claimed = serializers.SerializerMethodField()
    waiting_since = serializers.SerializerMethodField()
    escalation = serializers.SerializerMethodField()
    window_closes_at = serializers.SerializerMethodField()

    def get_assigned_to(self, obj: Conversation) -> dict[str, Any] | None:
        """Who handles it (the holder, or who closed it); null when nobody."""
        if obj.assigned_to_id is None:
            return None
        user = obj.assigned_to
        email = getattr(user, "email", "")
        return {"id": obj.assigned_to_id, "name": user_display_name(user), "email": email}

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

    def get_window_closes_at(self, obj: Conversation) -> str | None:
        """WhatsApp: when the 24-hour window closes (last customer message + 24 h); null on
        other channels. Past it only a template can be sent."""
        value = window_closes_at(obj)
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
            "tenant",
            "channel_label",
            "status",
            "status_label",
            "escalated_at",
            "escalation_reason",
            "escalation_priority",
            "priority_label",
            "escalation",
            "escalated_to",
            "assigned_to",
            "claim_expires_at",
            "claimed_at",
            "claimed",
            "waiting_since",
            "window_closes_at",
            "window_label",
            "last_message_preview",
            "unread_count",
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
        return delivery_error_label(failure_code(obj.deliveries.all(), obj.metadata))

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


class ConversationListView(mixins.ListModelMixin, MemberAPIView):
    """The inbox list: `status`, `channel`, `agent`, `assigned` (me|none|<user id>), `contact`,
    `tab` (waiting|mine|unassigned|bot|closed), `from`/`to` (dates), `q` (search), `tenant`."""

    serializer_class = ConversationSerializer

    @extend_schema(parameters=LIST_PARAMETERS)
    def get(self, request: Request) -> Response:
        return self.list(request)

    def get_queryset(self) -> Any:
        try:
            filters = conversation_filters_parse(
                self.request.query_params, tenant_ids=self.tenant_ids
            )
        except FilterError as error:
            raise StaffInputError(error.field, error.message) from None
        user = self.member_user
        if user is None and (filters.assigned == "me" or filters.tab == "mine"):
            field = "assigned" if filters.assigned == "me" else "tab"
            raise StaffInputError(
                field, _("Con una clave de API no hay «me»: indique el id del miembro del equipo.")
            )
        self.ordering = conversation_ordering(filters)
        return conversation_list(filters=filters, user_id=None if user is None else user.pk)

    @property
    def paginator(self) -> Any:
        paginator = super().paginator
        if isinstance(paginator, CursorPagination) and getattr(self, "ordering", None):
            paginator.ordering = self.ordering
        return paginator


class ConversationDetailView(MemberAPIView):
    """The card, its messages and its internal notes; opening it (staff session) marks it
    read for the member."""

    serializer_class = ConversationSerializer

    def get(self, request: Request, conversation_id: Any) -> Response:
        conversation = self.member_object(Conversation, conversation_id)
        user = self.member_user
        if user is not None:
            conversation_read_mark(conversation=conversation, user=user)
        return Response(conversation_body(conversation, user_id=getattr(user, "pk", None)))


def conversation_body(conversation: Conversation, *, user_id: int | None = None) -> dict[str, Any]:
    """The conversation JSON with its messages and notes (detail, and the actions' answer)."""
    rows = Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk)
    card = cards_annotate(
        rows.select_related("assigned_to", "escalated_to", "contact", "tenant"), user_id=user_id
    ).get()
    body = dict(ConversationSerializer(card).data)
    cost = conversation_costs(tenant_id=conversation.tenant_id, conversation_ids=[conversation.pk])
    # Model tokens + transcription + channel messages, from the usage ledger (USD).
    body["cost_usd"] = f"{cost[conversation.pk].total_usd:.6f}"
    body["cost"] = cost[conversation.pk].as_dict()
    messages = (
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation=conversation)
        .select_related("author")
        .prefetch_related("deliveries")
    )
    # The web chat visitor is typing now (a few seconds' TTL; see ai_agents.services.typing).
    body["customer_typing"] = customer_typing(conversation.pk)
    body["messages"] = MessageSerializer(messages.order_by("created_at", "id"), many=True).data
    body["notes"] = conversation_notes_json(conversation)
    return body
