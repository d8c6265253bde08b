"""`POST /api/v1/conversations/{id}/typing`: the inbox composer pings it while a staff member
writes a reply (every few seconds). The web chat visitor sees "escribiendo…" while it lasts
(TYPING_TTL_S after the last ping); on WhatsApp the customer's last message is marked read
with the typing indicator. 409 `conversation_closed` for a conversation that is over, 404 for
another tenant's."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.models import Conversation
from ai_agents.services.handoff import user_display_name
from ai_agents.services.typing import TYPING_TTL_S, staff_typing_mark
from erp.api.errors import error_body
from erp.api.views import TenantAPIView
from erp.tenancy.permissions import HasTenant
from erp.tenancy.selectors import access_tenant_object

TypingAnswer = inline_serializer(
    "TypingAnswer",
    {"typing": serializers.BooleanField(), "expires_in_s": serializers.IntegerField()},
)


class StaffTypingView(TenantAPIView):
    """A staff member is typing a reply to this conversation."""

    permission_classes = [HasTenant]

    @extend_schema(request=None, responses=TypingAnswer)
    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = access_tenant_object(Conversation, self.tenant, conversation_id)
        if conversation.status not in Conversation.OPEN_STATUSES:
            return Response(
                error_body("conversation_closed", _("La conversación está cerrada.")), status=409
            )
        # A staff session names a person; an API key does not (the widget then says "someone").
        staff = getattr(request._request, "membership", None) is not None
        user = request.user if staff else None
        staff_typing_mark(conversation=conversation, name=user_display_name(user))
        return Response({"typing": True, "expires_in_s": TYPING_TTL_S})
