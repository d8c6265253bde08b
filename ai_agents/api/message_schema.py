"""The OpenAPI shape of `POST /api/v1/agents/{id}/messages`'s answer (TurnResult.as_api_body):
documentation only, the view builds the body itself."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers


class OptionSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    title = serializers.CharField(max_length=72)
    description = serializers.CharField(max_length=72, required=False)


class ReplySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    citations = serializers.ListField(child=serializers.DictField())
    options = OptionSerializer(
        many=True,
        help_text=_(
            "0 o 2-10 opciones para que el cliente elija; devuelva la elegida en "
            "metadata.option_id con su título como texto."
        ),
    )


class EscalationSerializer(serializers.Serializer):
    reason = serializers.CharField()
    priority = serializers.CharField()


class MessageResultSerializer(serializers.Serializer):
    conversation_id = serializers.UUIDField()
    message_id = serializers.UUIDField()
    reply = ReplySerializer(allow_null=True)
    conversation_status = serializers.CharField()
    escalation = EscalationSerializer(allow_null=True)
    usage = serializers.DictField()
    suppressed = serializers.CharField(required=False)
