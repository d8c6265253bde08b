"""Agent configuration (CRUD) and conversation read endpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api import sse
from ai_agents.api.message_schema import MessageResultSerializer
from ai_agents.api.permissions import CanEditKnowledge
from ai_agents.models import Agent
from ai_agents.services import agents as services
from erp.api.views import TenantGenericAPIView
from erp.tenancy.models import Tenant
from erp.tenancy.selectors import access_tenant_object


class AgentSerializer(serializers.ModelSerializer):
    knowledge_bases = serializers.ListField(
        child=serializers.CharField(), required=False, write_only=True
    )
    tools_enabled = serializers.JSONField(required=False)
    history_config = serializers.JSONField(required=False)
    intent_detection = serializers.JSONField(required=False)
    escalation_triggers = serializers.JSONField(required=False)
    processing_config = serializers.JSONField(required=False)

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "description",
            "system_prompt",
            "provider",
            "model",
            "temperature",
            "max_output_tokens",
            "knowledge_bases",
            "tools_enabled",
            "history_config",
            "intent_detection",
            "escalation_triggers",
            "processing_config",
            "fallback_message",
            "escalation_message",
            "is_active",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def to_representation(self, instance: Agent) -> dict[str, Any]:
        data = super().to_representation(instance)
        links = Agent.knowledge_bases.through.objects.filter(agent_id=instance.pk)
        data["knowledge_bases"] = sorted(
            str(pk) for pk in links.values_list("knowledgebase_id", flat=True)
        )
        return data


def access_agent(tenant: Tenant, agent_id: Any) -> Agent:
    return access_tenant_object(Agent, tenant, agent_id)


def _invalid(exc: DjangoValidationError) -> exceptions.ValidationError:
    if hasattr(exc, "error_dict"):
        return exceptions.ValidationError({k: v for k, v in exc.message_dict.items()})
    return exceptions.ValidationError({"detail": exc.messages})


class AgentListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = AgentSerializer

    def get_queryset(self) -> Any:
        return Agent.objects.for_tenant(self.tenant).order_by("-created_at", "id")

    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=AgentSerializer, responses={201: AgentSerializer})
    def post(self, request: Request) -> Response:
        form = AgentSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            agent = services.agent_create(tenant=self.tenant, data=form.validated_data)
        except DjangoValidationError as exc:
            raise _invalid(exc) from None
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailView(TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = AgentSerializer

    def get(self, request: Request, agent_id: Any) -> Response:
        return Response(AgentSerializer(access_agent(self.tenant, agent_id)).data)

    @extend_schema(request=AgentSerializer, responses=AgentSerializer)
    def patch(self, request: Request, agent_id: Any) -> Response:
        agent = access_agent(self.tenant, agent_id)
        form = AgentSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        try:
            agent = services.agent_update(agent=agent, data=form.validated_data)
        except DjangoValidationError as exc:
            raise _invalid(exc) from None
        return Response(AgentSerializer(agent).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, agent_id: Any) -> Response:
        services.agent_delete(agent=access_agent(self.tenant, agent_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ContactInputSerializer(serializers.Serializer):
    external_id = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    email = serializers.EmailField(required=False, allow_blank=True)
    phone = serializers.CharField(max_length=40, required=False, allow_blank=True)


class MessageInputSerializer(serializers.Serializer):
    contact = ContactInputSerializer()
    text = serializers.CharField(max_length=8000, trim_whitespace=True)
    channel_message_id = serializers.CharField(max_length=100, required=False, allow_blank=False)
    metadata = serializers.DictField(required=False)


class AgentMessageView(TenantGenericAPIView):
    """POST /api/v1/agents/{id}/messages: one customer message through the pipeline (JSON, or
    SSE with `Accept: text/event-stream`)."""

    serializer_class = MessageInputSerializer
    renderer_classes = [JSONRenderer, sse.EventStreamRenderer]

    def get_permissions(self) -> Any:
        from erp.tenancy.permissions import HasTenant

        return [HasTenant()]

    @extend_schema(request=MessageInputSerializer, responses={200: MessageResultSerializer})
    def post(self, request: Request, agent_id: Any) -> Response:
        from ai_agents.conversations.engine import Inbound, message_process
        from ai_agents.conversations.inbound import inbound_clean

        agent = access_agent(self.tenant, agent_id)
        form = MessageInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        if not agent.is_active:
            raise exceptions.ValidationError({"agent": [_("El agente está inactivo.")]})
        data = form.validated_data
        inbound = inbound_clean(
            Inbound(
                text=data["text"],
                contact=data["contact"],
                channel="api",
                channel_message_id=data.get("channel_message_id"),
                metadata=data.get("metadata"),
            )
        )
        streaming = sse.wants_stream(request)
        if streaming:
            request.accepted_renderer = JSONRenderer()  # a JSON answer unless streaming
            request.accepted_media_type = "application/json"
        if streaming and agent.processing["streaming_enabled"]:
            started = sse.stream_start(agent, inbound)
            if started.response is not None:
                return started.response  # type: ignore[return-value]  # Django serves a StreamingHttpResponse
            result = started.limited  # limited before any token: 429 JSON, as without SSE
            assert result is not None  # Started holds either a response or a limited result
        else:
            result = message_process(agent=agent, inbound=inbound)
        if result.rate_limited is not None:
            return _rate_limited(result.as_api_body(), result.rate_limited)
        return Response(result.as_api_body())


def _rate_limited(body: dict[str, Any], limited: Mapping[str, Any]) -> Response:
    """429 with Retry-After; the message was stored (RN-4) and is named in the error."""
    retry_after = int(limited["retry_after_s"])
    return Response(
        {
            "error": {
                "code": "rate_limited",
                "message": _(
                    "Demasiados mensajes en esta conversación; inténtelo de nuevo en %(s)s s."
                )
                % {"s": retry_after},
                "retry_after": retry_after,
                "conversation_id": body["conversation_id"],
                "message_id": body["message_id"],
            }
        },
        status=status.HTTP_429_TOO_MANY_REQUESTS,
        headers={"Retry-After": str(retry_after)},
    )
