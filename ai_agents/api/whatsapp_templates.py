"""WhatsApp templates from the inbox: `GET /api/v1/conversations/{id}/templates` (the 24-hour
window and the approved templates of the conversation's channel) and
`POST /api/v1/conversations/{id}/template` (send one, its variables filled).

Rights: the person holding the conversation (as for a reply); a staff session acts in the
conversation's own tenant, an API key names the member with `staff_email`. The send is
idempotent on `client_key`: a retry answers the first message, nothing is sent twice.
Errors: 400 `validation_error` (client_key, variables), 400 `template_not_sendable` (not an
approved template of this channel), 403 `not_holder`, 409 `conversation_closed`, 404 for
another tenant's conversation.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.conversations import MessageSerializer, conversation_body
from ai_agents.api.member import MemberAPIView, StaffInputError
from ai_agents.api.notes import _body, _handoff_error
from ai_agents.models import Conversation
from ai_agents.rules.whatsapp_window import window_closes_at, window_is_open
from ai_agents.services import handoff
from ai_agents.services.whatsapp_templates import (
    CLIENT_KEY_MAX,
    approved_templates,
    conversation_template_send,
    template_json,
)
from erp.storable import storable_text

TemplateItem = inline_serializer(
    "WhatsAppTemplateItem",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "language": serializers.CharField(),
        "language_label": serializers.CharField(),
        "category": serializers.CharField(),
        "status": serializers.CharField(),
        "body_text": serializers.CharField(),
        "variables": serializers.ListField(child=serializers.CharField()),
    },
)
TemplatesResponse = inline_serializer(
    "ConversationTemplates",
    {
        "window_open": serializers.BooleanField(),
        "window_closes_at": serializers.DateTimeField(allow_null=True),
        "templates": serializers.ListField(child=TemplateItem),
    },
)
TemplateSendRequest = inline_serializer(
    "TemplateSendRequest",
    {
        "template_id": serializers.IntegerField(),
        "variables": serializers.ListField(child=serializers.CharField(), required=False),
        "client_key": serializers.CharField(max_length=CLIENT_KEY_MAX),
        "staff_email": serializers.EmailField(required=False),
    },
)


def window_facts(conversation: Conversation) -> dict[str, Any]:
    closes = window_closes_at(conversation)
    return {
        "window_open": window_is_open(conversation),
        "window_closes_at": closes.isoformat() if closes else None,
    }


class ConversationTemplatesView(MemberAPIView):
    """The window and the approved templates of the conversation's WhatsApp channel (an
    empty list on other channels)."""

    @extend_schema(responses=TemplatesResponse)
    def get(self, request: Request, conversation_id: Any) -> Response:
        conversation = self.member_object(Conversation, conversation_id)
        templates = [template_json(t) for t in approved_templates(conversation)]
        return Response({**window_facts(conversation), "templates": templates})


class TemplateSendView(MemberAPIView):
    """Sends an approved template `{"template_id", "variables": [...], "client_key"}`: stored
    as the holder's message with the text the customer reads; answers the conversation JSON
    with `message` and `created` (false for a retried key)."""

    @extend_schema(request=TemplateSendRequest, responses=dict)
    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = self.member_object(Conversation, conversation_id)
        data = _body(request)
        user = self.acting_staff(conversation.tenant_id, data)
        key = data.get("client_key")
        if (
            not isinstance(key, str)
            or not key.strip()
            or len(key) > CLIENT_KEY_MAX
            or storable_text(key) is not key  # NUL or a lone surrogate: not storable
        ):
            raise StaffInputError(
                "client_key",
                _("Indique client_key: un texto de hasta %(n)s caracteres.")
                % {"n": CLIENT_KEY_MAX},
            )
        try:
            message, created = conversation_template_send(
                conversation=conversation,
                user=user,
                template_id=data.get("template_id"),
                values=data.get("variables", []),
                client_key=key.strip(),
            )
        except handoff.HandoffError as error:
            return _handoff_error(error)
        body = conversation_body(conversation, user_id=getattr(user, "pk", None))
        body["message"] = MessageSerializer(message).data
        body["created"] = created
        return Response(body, status=201 if created else 200)
