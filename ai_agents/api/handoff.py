"""The human handoff over REST: `POST /api/v1/conversations/{id}/claim|takeover|reply|release|
close`.

Who acts: with a staff session, the logged-in member (the tenant is the membership's, or the
one named by `X-Tenant`). With an API key there is no person, so the body names one:
`{"staff_email": "..."}`, a member of the key's tenant (400 `staff_required` when missing,
400 `staff_unknown` when it is not a member).

Errors: 409 `conversation_claimed` (with `assigned_to` and `claim_expires_at` of the holder),
409 `conversation_closed`, 403 `not_holder`, 403 `not_allowed` (a take-over by a member who is
not owner/admin of the conversation's tenant), 400 `validation_error` (reply text), 404 for
conversations of other tenants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.conversations import ConversationSerializer, MessageSerializer
from ai_agents.api.conversations import conversation_body as _conversation_body
from ai_agents.models import Conversation
from ai_agents.services import handoff, handoff_takeover
from erp.api.errors import error_body
from erp.api.views import TenantAPIView
from erp.storable import unstorable, unstorable_message
from erp.tenancy.models import Membership
from erp.tenancy.permissions import HasTenant
from erp.tenancy.selectors import access_tenant_object


class StaffSerializer(serializers.Serializer):
    staff_email = serializers.EmailField(
        required=False, help_text=_("Con clave de API: el miembro del equipo que actúa.")
    )


class TextField(serializers.CharField):
    """A string, not a number turned into one, that PostgreSQL can store."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if unstorable(data):  # in words, before DRF's "Surrogate characters... U+D800"
            raise serializers.ValidationError(unstorable_message())
        return str(super().to_internal_value(data))


class ReplySerializer(StaffSerializer):
    text = TextField(max_length=handoff.REPLY_MAX_CHARS, trim_whitespace=False)


def _error(status: int, code: str, message: str, **extra: Any) -> Response:
    return Response(error_body(code, message, **_jsonable(extra)), status=status)


def _jsonable(extra: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in extra.items():
        out[key] = value.isoformat() if hasattr(value, "isoformat") else value
    return out


class HandoffActionView(TenantAPIView):
    permission_classes = [HasTenant]
    serializer_class = StaffSerializer
    action: Callable[..., Any]

    def post(self, request: Request, conversation_id: Any) -> Response:
        conversation = access_tenant_object(Conversation, self.tenant, conversation_id)
        data = request.data if isinstance(request.data, dict) else {}
        serializer = self.serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        user = self._acting_user(request, serializer.validated_data)
        if isinstance(user, Response):
            return user
        try:
            extra = self.perform(conversation, user, serializer.validated_data)
        except handoff.HandoffError as error:
            return _error(error.status, error.code, error.message, **error.extra)
        body = _conversation_body(
            Conversation.objects.for_tenant(self.tenant)
            .select_related("assigned_to")
            .get(pk=conversation.pk)
        )
        return Response({**body, **extra})

    def perform(
        self, conversation: Conversation, user: Any, data: dict[str, Any]
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _acting_user(self, request: Request, data: dict[str, Any]) -> Any:
        """The session's staff member, or (API key) the member named by `staff_email`."""
        if getattr(request._request, "membership", None) is not None:
            return request.user
        email = data.get("staff_email")
        if not email:
            return _error(
                400,
                "staff_required",
                _("Con una clave de API indique staff_email: el miembro del equipo que actúa."),
                field="staff_email",
            )
        member_ids = Membership.objects.for_tenant(self.tenant).values_list("user_id", flat=True)
        user = (
            get_user_model()
            .objects.filter(pk__in=list(member_ids), email__iexact=email, is_active=True)
            .order_by("pk")
            .first()
        )
        if user is None:
            return _error(
                400,
                "staff_unknown",
                _("%(email)s no es miembro del equipo de esta empresa.") % {"email": email},
                field="staff_email",
            )
        return user


class _StaffActionView(HandoffActionView):
    """An action with no body beyond `staff_email`: the service does it all."""

    service: Any = None  # staticmethod(service(conversation, user))

    @extend_schema(request=StaffSerializer, responses=ConversationSerializer)
    def post(self, request: Request, conversation_id: Any) -> Response:
        return super().post(request, conversation_id)

    def perform(
        self, conversation: Conversation, user: Any, data: dict[str, Any]
    ) -> dict[str, Any]:
        self.service(conversation, user)
        return {}


class ClaimView(_StaffActionView):
    """Takes the conversation for the acting member (a lease); 409 when another holds it."""

    service = staticmethod(handoff.conversation_claim)


class TakeoverView(_StaffActionView):
    """An owner/admin of the conversation's tenant takes it from the colleague who holds it
    (their lease moves; a note records it); 403 `not_allowed` for other members."""

    service = staticmethod(handoff_takeover.conversation_takeover)


class ReplyView(HandoffActionView):
    """The holder's reply `{"text"}`, stored and sent on the conversation's channel."""

    serializer_class = ReplySerializer

    @extend_schema(request=ReplySerializer, responses=ConversationSerializer)
    def post(self, request: Request, conversation_id: Any) -> Response:
        return super().post(request, conversation_id)

    def perform(
        self, conversation: Conversation, user: Any, data: dict[str, Any]
    ) -> dict[str, Any]:
        message = handoff.conversation_reply(conversation, user, data["text"])
        return {"message": MessageSerializer(message).data}


class ReleaseView(_StaffActionView):
    """Back to the bot: active, nobody holds it (escalation fields kept)."""

    service = staticmethod(handoff.conversation_release)


class CloseView(_StaffActionView):
    """Ends the conversation."""

    service = staticmethod(handoff.conversation_close)
