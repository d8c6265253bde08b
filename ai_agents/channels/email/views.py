"""POST /webhooks/email/<token>: one raw RFC 5322 message, as mail providers forward it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt

from ai_agents.channels.email.adapter import email_receive
from ai_agents.channels.email.parse import InvalidEmail, email_parse
from ai_agents.models import ChannelBinding
from erp.api.errors import json_error


@csrf_exempt
def email_webhook(request: HttpRequest, token: str) -> HttpResponse:
    """Any content type (message/rfc822, text/plain, application/octet-stream): the body is
    the message. Answers as soon as it is stored; the model runs on the real-time queue. The
    size limit is UPLOAD_MAX_BYTES (a 413 from the body-size middleware)."""
    if request.method != "POST":
        response = json_error(405, _("Use POST con el mensaje completo como cuerpo."))
        response["Allow"] = "POST"
        return response
    binding = (
        ChannelBinding.objects.unscoped()
        .select_related("agent")
        .filter(token=token[:64], type=ChannelBinding.Type.EMAIL, is_active=True)
        .first()
    )
    if binding is None:
        message = _("Canal de correo desconocido o inactivo.")
        return json_error(404, message, code="channel_not_found")
    try:
        parsed = email_parse(request.body)
    except InvalidEmail as exc:
        return json_error(400, str(exc), code="invalid_email")
    return JsonResponse(email_receive(binding=binding, parsed=parsed))
