"""Canned replies: `/api/v1/canned-replies` (GET ?q=&tenant=, POST), `/{id}` (GET, PATCH,
PUT, DELETE) and `POST /{id}/render {"conversation_id"}`.

Rights: any staff member of the reply's tenant (or an API key of it). A member of several
tenants lists all of theirs and creates in `tenant` (body; default: the `X-Tenant` one, else
their first). JSON: {"id", "tenant": {"id", "name"}, "shortcut", "title", "text",
"created_at", "updated_at"}.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.member import MemberAPIView, StaffInputError
from ai_agents.models import CannedReply, Conversation
from ai_agents.services import canned_replies as service

LOOKUP_MAX_CHARS = 100


class CannedReplySerializer(serializers.ModelSerializer):
    tenant = serializers.SerializerMethodField()

    def get_tenant(self, obj: CannedReply) -> dict[str, Any]:
        return {"id": obj.tenant_id, "name": obj.tenant.name}

    class Meta:
        model = CannedReply
        fields = ["id", "tenant", "shortcut", "title", "text", "created_at", "updated_at"]
        read_only_fields = fields


def _data(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise StaffInputError("body", _("El cuerpo debe ser un objeto JSON."))
    return dict(request.data)


def _invalid(error: service.CannedReplyInvalid) -> StaffInputError:
    return StaffInputError(error.field, error.message)


WriteRequest = inline_serializer(
    "CannedReplyWrite",
    {
        "shortcut": serializers.CharField(),
        "title": serializers.CharField(),
        "text": serializers.CharField(),
        "tenant": serializers.IntegerField(required=False),
    },
)


class CannedReplyListView(mixins.ListModelMixin, MemberAPIView):
    serializer_class = CannedReplySerializer

    def get_queryset(self) -> Any:
        rows = CannedReply.objects.filter(tenant_id__in=self._tenants()).select_related("tenant")
        q = self.request.query_params.get("q", "").strip().lstrip("/")
        if len(q) > LOOKUP_MAX_CHARS:
            raise StaffInputError(
                "q", _("La búsqueda admite como máximo %(n)s caracteres.") % {"n": LOOKUP_MAX_CHARS}
            )
        if q:
            rows = rows.filter(Q(shortcut__istartswith=q) | Q(title__icontains=q))
        return rows

    def _tenants(self) -> tuple[int, ...]:
        raw = self.request.query_params.get("tenant", "").strip()
        if not raw:
            return self.tenant_ids
        if not raw.isdigit() or int(raw) not in self.memberships:
            raise StaffInputError("tenant", _("No pertenece a la empresa %(v)s.") % {"v": raw[:40]})
        return (int(raw),)

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="shortcut prefix or words of the title"),
            OpenApiParameter("tenant", int),
        ]
    )
    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=WriteRequest, responses={201: CannedReplySerializer})
    def post(self, request: Request) -> Response:
        data = _data(request)
        tenant_id = data.get(
            "tenant", self.tenant.pk if self.tenant.pk in self.memberships else None
        )
        if tenant_id not in self.memberships:
            raise StaffInputError("tenant", _("No pertenece a esa empresa."))
        try:
            reply = service.canned_reply_create(
                tenant_id=tenant_id,
                shortcut=data.get("shortcut"),
                title=data.get("title"),
                text=data.get("text"),
            )
        except service.CannedReplyInvalid as error:
            raise _invalid(error) from None
        return Response(CannedReplySerializer(self._load(reply.pk)).data, status=201)

    def _load(self, pk: Any) -> CannedReply:
        return self.member_object(CannedReply, pk, CannedReply.objects.select_related("tenant"))


class CannedReplyDetailView(MemberAPIView):
    serializer_class = CannedReplySerializer

    def _reply(self, reply_id: Any) -> CannedReply:
        return self.member_object(
            CannedReply, reply_id, CannedReply.objects.select_related("tenant")
        )

    def get(self, request: Request, reply_id: Any) -> Response:
        return Response(CannedReplySerializer(self._reply(reply_id)).data)

    @extend_schema(request=WriteRequest)
    def patch(self, request: Request, reply_id: Any) -> Response:
        reply = self._reply(reply_id)
        changes = {k: v for k, v in _data(request).items() if k in ("shortcut", "title", "text")}
        try:
            service.canned_reply_update(reply=reply, changes=changes)
        except service.CannedReplyInvalid as error:
            raise _invalid(error) from None
        return Response(CannedReplySerializer(self._reply(reply_id)).data)

    @extend_schema(request=WriteRequest)
    def put(self, request: Request, reply_id: Any) -> Response:
        return self.patch(request, reply_id)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, reply_id: Any) -> Response:
        service.canned_reply_delete(reply=self._reply(reply_id))
        return Response(status=204)


RenderRequest = inline_serializer(
    "CannedReplyRender",
    {
        "conversation_id": serializers.UUIDField(),
        "staff_email": serializers.EmailField(required=False),
    },
)
RenderResponse = inline_serializer("CannedReplyRendered", {"text": serializers.CharField()})


class CannedReplyRenderView(MemberAPIView):
    """The text with {{contact.*}} of the conversation and {{agent.name}} of the acting member
    (with an API key: `staff_email`, optional; without it the name renders empty)."""

    @extend_schema(request=RenderRequest, responses=RenderResponse)
    def post(self, request: Request, reply_id: Any) -> Response:
        reply = self.member_object(CannedReply, reply_id)
        data = _data(request)
        raw = data.get("conversation_id")
        if not raw:
            raise StaffInputError("conversation_id", _("Indique conversation_id."))
        conversation = self.member_object(
            Conversation, raw, Conversation.objects.select_related("contact")
        )
        if conversation.tenant_id != reply.tenant_id:
            raise StaffInputError(
                "conversation_id", _("La conversación es de otra empresa que la respuesta.")
            )
        agent = self.acting_staff(reply.tenant_id, data, required=False)
        text = service.canned_reply_render(reply=reply, conversation=conversation, agent=agent)
        return Response({"text": text})
