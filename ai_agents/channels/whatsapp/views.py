"""`/webhooks/whatsapp`: Meta's verification GET and its signed event POSTs.

The POST verifies the signature over the raw body, stores what it carries, and answers 200
before any model or Graph work. Without `WHATSAPP_APP_SECRET` / `WHATSAPP_VERIFY_TOKEN` the
webhook refuses everything (503): Meta keeps retrying until it is configured, nothing is lost.
"""

from __future__ import annotations

import hmac
import json
import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt

from ai_agents.channels.whatsapp.adapter import whatsapp_webhook_accept
from ai_agents.channels.whatsapp.payload import signature_valid
from erp.api.errors import json_error

logger = logging.getLogger(__name__)


@csrf_exempt
def whatsapp_webhook(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _verify(request)
    if request.method == "POST":
        return _events(request)
    return json_error(405, _("Método no permitido."))


def _not_configured() -> HttpResponse:
    return json_error(
        503, _("El canal de WhatsApp no está configurado."), code="whatsapp_not_configured"
    )


def _verify(request: HttpRequest) -> HttpResponse:
    token = settings.WHATSAPP_VERIFY_TOKEN
    if not token:
        return _not_configured()
    given = request.GET.get("hub.verify_token", "")
    if request.GET.get("hub.mode") != "subscribe" or not hmac.compare_digest(
        given.encode(), token.encode()
    ):
        return json_error(403, _("Token de verificación incorrecto."), code="invalid_verify_token")
    return HttpResponse(request.GET.get("hub.challenge", ""), content_type="text/plain")


def _events(request: HttpRequest) -> HttpResponse:
    secret = settings.WHATSAPP_APP_SECRET
    if not secret:
        return _not_configured()
    header = request.headers.get("X-Hub-Signature-256")
    if not header:
        return json_error(401, _("Falta la firma X-Hub-Signature-256."), code="missing_signature")
    raw = request.body  # the exact bytes Meta signed: never re-serialised
    if not signature_valid(raw, header, secret):
        logger.warning("whatsapp.bad_signature")
        return json_error(403, _("La firma no es válida."), code="invalid_signature")
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return json_error(400, _("El cuerpo no es JSON válido."), code="invalid_json")
    outcome = whatsapp_webhook_accept(payload)
    return JsonResponse({"status": "ok", "stored": outcome.stored})
