from __future__ import annotations

import io
import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from erp.api.errors import default_message, json_error, wants_json
from erp.api.handlers import database_unavailable, redis_unavailable
from erp.db_outage import (
    database_up,
    is_outage_error,
    is_redis_outage_error,
    outage_suspected,
)
from erp.logging import clean_request_id, request_id_var
from erp.tenancy.scoping import ALL_TENANTS, reset_scope, set_scope

logger = logging.getLogger(__name__)
Handler = Callable[[HttpRequest], HttpResponse]
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


class RequestIdMiddleware:
    """Takes `X-Request-ID` (or makes one), puts it in every log line and the response."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = clean_request_id(request.headers.get("X-Request-ID"))
        request.request_id = request_id  # type: ignore[attr-defined]
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = request_id
        return response


def body_limit(path: str) -> int:
    if any(marker in path for marker in settings.UPLOAD_PATH_MARKERS):
        return int(settings.UPLOAD_MAX_BYTES)
    if wants_json_path(path):
        return int(settings.API_MAX_BODY_BYTES)
    return int(settings.UPLOAD_MAX_BYTES)


def wants_json_path(path: str) -> bool:
    return path.startswith(("/api/", "/webhooks/"))


class BodySizeLimitMiddleware:
    """413 JSON before reading a body over the route's limit (1 MB API, more for uploads)."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in _BODY_METHODS:
            limit = body_limit(request.path)
            raw_length = request.META.get("CONTENT_LENGTH") or ""
            try:
                length = int(raw_length) if raw_length else None
            except ValueError:
                return json_error(400, _("Content-Length no válido."), code="bad_request")
            if length is not None and length > limit:
                return self._too_large(limit)
            if length is None:
                # No length announced (chunked): read at most limit + 1 bytes to decide.
                body = request.read(limit + 1)
                if len(body) > limit:
                    return self._too_large(limit)
                request._body = body  # type: ignore[attr-defined]
                request._stream = io.BytesIO(body)  # type: ignore[attr-defined]
        return self.get_response(request)

    @staticmethod
    def _too_large(limit: int) -> HttpResponse:
        return json_error(413, default_message(413), code="payload_too_large", limit_bytes=limit)


class DatabaseOutageMiddleware:
    """While the database is down, 503 at once (see erp/db_outage.py); static files (served
    before this) and /healthz (which reports the outage itself) still answer."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != "/healthz" and not database_up():
            return database_unavailable(request)
        return self.get_response(request)


class JsonErrorsMiddleware:
    """Under /api/ and /webhooks/ an error is always JSON, never an HTML page."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and wants_json(request)
            and not response.get("Content-Type", "").startswith("application/json")
            and not getattr(response, "streaming", False)
        ):
            status = response.status_code
            replacement = json_error(status, default_message(status))
            for header in ("Allow", "Retry-After", "WWW-Authenticate"):
                if header in response:
                    replacement[header] = response[header]
            return replacement
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not wants_json(request):
            return None
        from django.core.exceptions import PermissionDenied, RequestDataTooBig
        from django.http import Http404

        if isinstance(exception, Http404):
            return json_error(404, default_message(404))
        if isinstance(exception, PermissionDenied):
            return json_error(403, default_message(403))
        if isinstance(exception, RequestDataTooBig):
            return json_error(413, default_message(413), code="payload_too_large")
        if is_outage_error(exception):
            outage_suspected()
            logger.warning("database_unavailable", extra={"path": request.path}, exc_info=True)
            return database_unavailable(request)
        if is_redis_outage_error(exception):
            logger.warning("redis_unavailable", extra={"path": request.path}, exc_info=True)
            return redis_unavailable(request)
        logger.exception("unhandled_error", extra={"path": request.path})
        return json_error(500, default_message(500))


class StaffTenantScopeMiddleware:
    """Staff pages (admin, inbox) act for the user's tenants; superusers for all of them.

    API views set their own scope after DRF authentication (`erp.api.views.TenantAPIView`).
    """

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if wants_json(request) or user is None or not user.is_authenticated:
            return self.get_response(request)
        if user.is_superuser:
            scope = ALL_TENANTS
        else:
            from erp.tenancy.selectors import tenant_ids_for

            scope = frozenset(tenant_ids_for(user)) if user.is_staff else frozenset()
        token = set_scope(scope)
        try:
            return self.get_response(request)
        finally:
            reset_scope(token)
