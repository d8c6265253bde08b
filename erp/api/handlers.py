"""Django's error handlers: JSON under /api/ and /webhooks/, the usual pages elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from erp.api.errors import default_message, json_error, wants_json


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if wants_json(request):
        return json_error(404, default_message(404))
    return defaults.page_not_found(request, exception)  # type: ignore[arg-type]


def server_error(request: HttpRequest) -> HttpResponse:
    if wants_json(request):
        return json_error(500, default_message(500))
    return defaults.server_error(request)
