"""Working a conversation from the inbox: `POST /api/v1/conversations/{id}/assign`,
`/notes` and `/read`, and the notes' JSON in the conversation detail.

Rights: any staff member of the conversation's tenant (or an API key of it, naming the acting
member with `staff_email`). Errors: 400 in words (`validation_error`, `staff_email`), 404 for
another tenant's conversation, 409 `conversation_claimed` / `conversation_closed` for an
assignment while a third person's lease runs or after the end.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.cards import note_json
from ai_agents.api.conversations import conversation_body
from ai_agents.api.member import MemberAPIView, StaffInputError, staff_member
from ai_agents.models import Conversation
from ai_agents.models.inbox import NOTE_MAX_CHARS
from ai_agents.services import handoff, inbox
from erp.api.errors import error_body


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise StaffInputError("body", _("El cuerpo debe ser un objeto JSON."))
    return dict(request.data)


def _handoff_error(error: handoff.HandoffError) -> Response:
    extra = {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in error.extra.items()}
    return Response(error_body(error.code, error.message, **extra), status=error.status)


AssignRequest = inline_serializer("AssignRequest", {"staff_email": serializers.EmailField()})
NoteRequest = inline_serializer(
    "NoteRequest",
    {
        "text": serializers.CharField(max_length=NOTE_MAX_CHARS),
        "staff_email": serializers.EmailField(required=False),
    },
)
StaffRequest = inline_serializer(
    "ReadRequest", {"staff_email": serializers.EmailField(required=False)}
)


class AssignView(MemberAPIView):
    """Gives the conversation to a teammate `{"staff_email"}` (a staff member of its tenant),
    who then holds it under the lease; answers the conversation JSON."""

    @extend_schema(request=AssignRequest, responses=dict)
    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = self.member_object(Conversation, conversation_id)
        data = _body(request)
        email = data.get("staff_email")
        if not isinstance(email, str) or not email.strip():
            raise StaffInputError(
                "staff_email", _("Indique staff_email: el miembro del equipo que la atenderá.")
            )
        assignee = staff_member(conversation.tenant_id, email)
        acting = self.acting_staff(conversation.tenant_id, {}, required=False) or assignee
        try:
            inbox.conversation_assign(conversation=conversation, assignee=assignee, by=acting)
        except handoff.HandoffError as error:
            return _handoff_error(error)
        return Response(conversation_body(conversation, user_id=getattr(acting, "pk", None)))


class NoteView(MemberAPIView):
    """Adds an internal note `{"text"}` (at most NOTE_MAX_CHARS characters): 201 with it."""

    @extend_schema(request=NoteRequest, responses={201: dict})
    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = self.member_object(Conversation, conversation_id)
        data = _body(request)
        author = self.acting_staff(conversation.tenant_id, data)
        try:
            note = inbox.conversation_note_add(
                conversation=conversation, author=author, text=data.get("text")
            )
        except handoff.HandoffError as error:
            return _handoff_error(error)
        note.author = author
        return Response(note_json(note), status=201)


class ReadView(MemberAPIView):
    """Marks the conversation read for the acting member: `{"unread_count": 0}`."""

    @extend_schema(request=StaffRequest, responses=dict)
    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = self.member_object(Conversation, conversation_id)
        user = self.acting_staff(conversation.tenant_id, _body(request))
        inbox.conversation_read_mark(conversation=conversation, user=user)
        return Response({"id": str(conversation.pk), "unread_count": 0})
