"""`POST /api/v1/conversations/{id}/feedback {"rating": 1-5, "text": "..."}`: the customer's
satisfaction and comment on a conversation, written by the tenant's staff or an API key (the
web chat's survey uses the same service). Either field alone; a field left out keeps its
value, `"rating": null` clears it. 400 `validation_error` for a rating outside 1-5 (or not an
integer), a text over FEEDBACK_TEXT_MAX_CHARS or an empty body; 404 for another tenant's
conversation."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.conversations import ConversationSerializer
from ai_agents.api.handoff import TextField
from ai_agents.models import Conversation
from erp.api.views import TenantAPIView
from erp.tenancy.permissions import HasTenant
from erp.tenancy.selectors import access_tenant_object

FEEDBACK_TEXT_MAX_CHARS = 2000


class FeedbackSerializer(serializers.Serializer):
    rating = serializers.IntegerField(
        min_value=1,
        max_value=5,
        required=False,
        allow_null=True,
        help_text=_("Satisfacción del cliente, de 1 (mala) a 5 (excelente); null la borra."),
    )
    text = TextField(
        max_length=FEEDBACK_TEXT_MAX_CHARS,
        required=False,
        allow_blank=True,
        help_text=_("Comentario del cliente."),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(_("Indique la valoración (rating) o el comentario."))
        return attrs


def conversation_feedback_save(conversation: Conversation, data: dict[str, Any]) -> None:
    """Writes the given fields only (one UPDATE, in the conversation's tenant)."""
    values: dict[str, Any] = {}
    if "rating" in data:
        values["satisfaction_rating"] = data["rating"]
    if "text" in data:
        values["feedback_text"] = data["text"].strip()
    Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk).update(
        **values
    )


class FeedbackView(TenantAPIView):
    """The customer's satisfaction (1-5) and comment; answers the conversation."""

    permission_classes = [HasTenant]
    serializer_class = FeedbackSerializer

    @extend_schema(request=FeedbackSerializer, responses=ConversationSerializer)
    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = access_tenant_object(Conversation, self.tenant, conversation_id)
        form = FeedbackSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        conversation_feedback_save(conversation, dict(form.validated_data))
        fresh = (
            Conversation.objects.for_tenant(self.tenant)
            .select_related("assigned_to", "escalated_to")
            .get(pk=conversation.pk)
        )
        return Response(ConversationSerializer(fresh).data)
