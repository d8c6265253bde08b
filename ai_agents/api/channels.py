"""Channel bindings (CRUD): where an agent meets customers. Secrets are write-only; the response
carries what the operator pastes elsewhere (the e-mail webhook URL, the web chat snippet). The
e-mail webhook URL holds the token that lets anyone post mail to the agent, so only who configures
channels (API keys, owners and admins) reads it; the `agent` role sees the other fields."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import escape
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.permissions import CanEditKnowledge
from ai_agents.models import ChannelBinding
from ai_agents.services import channels as services
from erp.api.views import TenantGenericAPIView
from erp.tenancy.models import ApiKey, Tenant
from erp.tenancy.selectors import access_tenant_object


class ChannelInputSerializer(serializers.Serializer):
    """Shapes only; the rules per type live in `ai_agents.services.channels`."""

    type = serializers.ChoiceField(choices=ChannelBinding.Type.choices, required=False)
    agent = serializers.UUIDField(required=False)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    is_active = serializers.BooleanField(required=False)
    phone_number_id = serializers.CharField(max_length=64, required=False)
    waba_id = serializers.CharField(
        max_length=64,
        required=False,
        help_text=_("Solo WhatsApp: id de la cuenta de WhatsApp Business (plantillas)."),
    )
    access_token = serializers.CharField(
        max_length=4000, required=False, write_only=True, help_text=_("Solo escritura.")
    )
    whatsapp_template = serializers.JSONField(
        required=False,
        help_text=services.WHATSAPP_TEMPLATE_HELP,
    )
    address = serializers.CharField(max_length=254, required=False)
    allowed_origins = serializers.JSONField(
        required=False, help_text=_('Lista de orígenes, p. ej. ["https://tienda.es"].')
    )
    appearance = serializers.JSONField(
        required=False,
        help_text=_(
            "Solo chat web: color, title, greeting, launcher_text, position "
            "(bottom-right|bottom-left), avatar_url (https). Vacío: valores por defecto."
        ),
    )


class ChannelSerializer(serializers.Serializer):
    """The response: common fields plus those of the binding's type (the others are left out)."""

    id = serializers.UUIDField()
    type = serializers.ChoiceField(choices=ChannelBinding.Type.choices)
    agent = serializers.UUIDField(source="agent_id")
    name = serializers.CharField()
    is_active = serializers.BooleanField()
    phone_number_id = serializers.CharField(required=False, help_text=_("Solo WhatsApp."))
    has_access_token = serializers.BooleanField(required=False, help_text=_("Solo WhatsApp."))
    waba_id = serializers.CharField(required=False, help_text=_("Solo WhatsApp."))
    whatsapp_template = serializers.JSONField(required=False, help_text=_("Solo WhatsApp."))
    address = serializers.EmailField(required=False, help_text=_("Solo correo."))
    webhook_url = serializers.URLField(
        required=False,
        help_text=_(
            "Solo correo, y solo para claves de API, propietarios y administradores: URL de "
            "reenvío del correo entrante."
        ),
    )
    allowed_origins = serializers.ListField(
        child=serializers.CharField(), required=False, help_text=_("Solo chat web.")
    )
    appearance = serializers.JSONField(required=False, help_text=_("Solo chat web."))
    public_key = serializers.CharField(required=False, help_text=_("Solo chat web."))
    embed_snippet = serializers.CharField(required=False, help_text=_("Solo chat web."))
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def channel_representation(binding: ChannelBinding, request: HttpRequest) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(binding.pk),
        "type": binding.type,
        "agent": str(binding.agent_id),
        "name": binding.name,
        "is_active": binding.is_active,
    }
    if binding.type == ChannelBinding.Type.WHATSAPP:
        data["phone_number_id"] = binding.phone_number_id
        data["has_access_token"] = bool(binding.access_token)
        data["waba_id"] = binding.waba_id
        data["whatsapp_template"] = binding.whatsapp_template or {}
    elif binding.type == ChannelBinding.Type.EMAIL:
        data["address"] = binding.address
        if can_configure(request):
            data["webhook_url"] = email_webhook_url(binding, request)
    elif binding.type == ChannelBinding.Type.WEBCHAT:
        data["allowed_origins"] = list(binding.allowed_origins or [])
        data["appearance"] = dict(binding.appearance or {})
        data["public_key"] = binding.token
        data["embed_snippet"] = webchat_snippet(binding, request)
    data["created_at"] = binding.created_at.isoformat().replace("+00:00", "Z")
    data["updated_at"] = binding.updated_at.isoformat().replace("+00:00", "Z")
    return data


def can_configure(request: HttpRequest) -> bool:
    """An API key, or a staff member who may manage the tenant (fails closed otherwise)."""
    if isinstance(getattr(request, "auth", None), ApiKey):
        return True
    membership = getattr(getattr(request, "_request", request), "membership", None)
    return membership is not None and bool(membership.can_manage)


def email_webhook_url(binding: ChannelBinding, request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("webhook-email", args=[binding.token]))


def webchat_snippet(binding: ChannelBinding, request: HttpRequest) -> str:
    src = request.build_absolute_uri("/widget.js")
    return f'<script src="{escape(src)}" data-key="{escape(binding.token)}"></script>'


def access_channel(tenant: Tenant, channel_id: Any) -> ChannelBinding:
    return access_tenant_object(ChannelBinding, tenant, channel_id)


def _invalid(exc: DjangoValidationError) -> exceptions.APIException:
    if isinstance(exc, services.PhoneNumberTaken):
        return PhoneNumberTakenError(exc.messages[0])
    if hasattr(exc, "error_dict"):
        return exceptions.ValidationError(dict(exc.message_dict.items()))
    return exceptions.ValidationError({"detail": exc.messages})


class PhoneNumberTakenError(exceptions.APIException):
    status_code = 400
    default_code = "phone_number_taken"
    default_detail = _("Este número de WhatsApp ya está conectado a otro canal.")


def _input(request: Request) -> dict[str, Any]:
    form = ChannelInputSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    data = dict(form.validated_data)
    if "agent" in data:
        data["agent"] = str(data["agent"])
    return data


class ChannelListView(mixins.ListModelMixin, TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = ChannelSerializer

    def get_queryset(self) -> Any:
        return ChannelBinding.objects.for_tenant(self.tenant).select_related("agent")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        rows = [channel_representation(b, request) for b in page or []]
        return self.get_paginated_response(rows)

    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=ChannelInputSerializer, responses={201: ChannelSerializer})
    def post(self, request: Request) -> Response:
        try:
            binding = services.channel_create(tenant=self.tenant, data=_input(request))
        except DjangoValidationError as exc:
            raise _invalid(exc) from None
        return Response(channel_representation(binding, request), status=status.HTTP_201_CREATED)


class ChannelDetailView(TenantGenericAPIView):
    permission_classes = [CanEditKnowledge]
    serializer_class = ChannelSerializer

    def get(self, request: Request, channel_id: Any) -> Response:
        binding = access_channel(self.tenant, channel_id)
        return Response(channel_representation(binding, request))

    @extend_schema(request=ChannelInputSerializer, responses=ChannelSerializer)
    def patch(self, request: Request, channel_id: Any) -> Response:
        binding = access_channel(self.tenant, channel_id)
        try:
            binding = services.channel_update(binding=binding, data=_input(request))
        except DjangoValidationError as exc:
            raise _invalid(exc) from None
        return Response(channel_representation(binding, request))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, channel_id: Any) -> Response:
        services.channel_delete(binding=access_channel(self.tenant, channel_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
