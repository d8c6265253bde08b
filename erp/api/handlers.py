"""Django's error handlers: JSON under /api/ and /webhooks/, the usual pages elsewhere."""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views import defaults

from erp.api.errors import default_message, json_error, wants_json
from erp.db_outage import is_outage_error, is_redis_outage_error, outage_suspected

RETRY_AFTER_SECONDS = 5


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if wants_json(request):
        return json_error(404, default_message(404))
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    # Called while Django handles the exception: a database that cannot be reached is a 503
    # the client may retry, not a bug.
    exc = sys.exc_info()[1]
    if is_outage_error(exc):
        outage_suspected()
        return database_unavailable(request)
    if is_redis_outage_error(exc):
        return redis_unavailable(request)
    if wants_json(request):
        return json_error(500, default_message(500))
    return defaults.server_error(request)


def database_unavailable(request: HttpRequest) -> HttpResponse:
    message = _("La base de datos no está disponible; inténtelo de nuevo en unos segundos.")
    return _unavailable(request, message, "database_unavailable")


def redis_unavailable(request: HttpRequest) -> HttpResponse:
    message = _("El servicio no está disponible; inténtelo de nuevo en unos segundos.")
    return _unavailable(request, message, "service_unavailable")


def _unavailable(request: HttpRequest, message: str, code: str) -> HttpResponse:
    if wants_json(request):
        response: HttpResponse = json_error(503, message, code=code)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
