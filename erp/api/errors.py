"""The API's error shape: `{"error": {"code": "...", "message": "...", ...}}`.

DRF errors go through `exception_handler`; plain Django views under /api/ and /webhooks/
get the same shape from `erp.middleware.JsonErrorsMiddleware` and the handlers below.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import (
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

logger = logging.getLogger(__name__)

JSON_PREFIXES = ("/api/", "/webhooks/", "/healthz")

_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "server_error",
    502: "bad_gateway",
    503: "unavailable",
}


class ServiceError(Exception):
    """A refusal a service raises in words: the API answers `status` with `code`, `message`
    and `extra` as the error body (subclasses set `code` and `status`)."""

    code = "bad_request"
    status = 400

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(JSON_PREFIXES)


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def json_error(status: int, message: str, code: str | None = None, **extra: Any) -> JsonResponse:
    return JsonResponse(
        error_body(code or _CODES.get(status, "error"), message, **extra), status=status
    )


def default_message(status: int) -> str:
    return {
        400: _("Solicitud no válida."),
        401: _("Falta la autenticación o no es válida."),
        403: _("No tiene permiso para esta acción."),
        404: _("No encontrado."),
        405: _("Método no permitido."),
        413: _("El cuerpo de la solicitud es demasiado grande."),
        415: _("Tipo de contenido no admitido."),
        500: _("Error interno del servidor."),
    }.get(status, _("Error."))


def suspicious_error(exc: SuspiciousOperation) -> tuple[int, dict[str, Any]]:
    """Django's refusals of a request's shape (DATA_UPLOAD_MAX_NUMBER_FIELDS and _FILES,
    DATA_UPLOAD_MAX_MEMORY_SIZE, a forged session...) as a status and the error body: the
    client's fault, so a 4xx, never a 500."""
    logger.warning("request.refused", extra={"reason": type(exc).__name__})
    if isinstance(exc, RequestDataTooBig):
        return 413, error_body("payload_too_large", default_message(413))
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        message = _("Demasiados campos o parámetros (máximo %(n)s).") % {"n": limit}
        return 400, error_body("too_many_fields", message, limit=limit)
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        message = _("Demasiados archivos (máximo %(n)s).") % {"n": limit}
        return 400, error_body("too_many_files", message, limit=limit)
    return 400, error_body("bad_request", default_message(400))


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(default_message(404))
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, SuspiciousOperation):
        status, body = suspicious_error(exc)
        return Response(body, status=status)
    elif isinstance(exc, exceptions.ParseError):
        # DRF's "JSON parse error - Expecting value: line 1 column 1 (char 0)": English and
        # internal; the API's own message instead (parsers are JSON-only, see settings).
        exc = exceptions.ParseError(_("El cuerpo de la solicitud no es JSON válido."))
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: let Django log it and JsonErrorsMiddleware shape the 500

    status = exc.status_code
    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]  # checked by the getattr above
    if getattr(exc, "wait", None) is not None:
        headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]  # checked by the getattr above

    detail = exc.detail
    extra: dict[str, Any] = {}
    if isinstance(detail, dict | list):
        extra["fields"] = detail
        message = _first_message(detail) or default_message(status)
        code = "validation_error" if status == 400 else _CODES.get(status, "error")
        if isinstance(detail, dict) and len(detail) == 1:
            extra["field"] = next(iter(detail))
    else:
        message = str(detail)
        code = getattr(detail, "code", None) or _CODES.get(status, "error")
        if code in {"error", "invalid"}:
            code = _CODES.get(status, "error")
    set_rollback()
    return Response(error_body(code, message, **extra), status=status, headers=headers)


def _first_message(detail: Any) -> str | None:
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            if inner:
                return inner if key == "non_field_errors" else f"{key}: {inner}"
    elif isinstance(detail, list):
        for value in detail:
            inner = _first_message(value)
            if inner:
                return inner
    elif detail is not None:
        return str(detail)
    return None
