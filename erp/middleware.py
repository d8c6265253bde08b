from __future__ import annotations

import io
import logging
from collections.abc import Callable

import numpy as np
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.translation import gettext as _

from erp.api.errors import default_message, json_error, suspicious_error, wants_json
from erp.api.handlers import database_unavailable, redis_unavailable
from erp.db_outage import (
    database_up,
    is_outage_error,
    is_redis_outage_error,
    outage_suspected,
)
from erp.logging import clean_request_id, request_id_var
from erp.tenancy.scoping import ALL_TENANTS, Scope, reset_scope, set_scope

logger = logging.getLogger(__name__)
Handler = Callable[[HttpRequest], HttpResponse]
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# Deeper JSON is refused before any parser sees it: Python's parser raises RecursionError
# near 1,000 levels, and recursive code after it (serializers, jsonb) would fail sooner.
JSON_MAX_DEPTH = 64
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as int8
_CHUNK = 1024 * 1024
_RAW_BODY_PREFIXES = ("/webhooks/email/",)


class RequestIdMiddleware:
    """Takes `X-Request-ID` (or makes one), puts it in every log line and the response."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = clean_request_id(request.headers.get("X-Request-ID"))
        request.request_id = request_id  # type: ignore[attr-defined]  # read by erp.logging
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
    """Request shapes refused before any view: 413 JSON before reading a body over the
    route's limit (1 MB API, more for uploads), 400 for JSON nested too deep, and 400 for a NUL
    in the path or query string (no valid URL holds one; PostgreSQL would refuse it in a
    lookup, a 500)."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "%00" in query or "\x00" in query:
            message = _("La dirección contiene un carácter nulo.")
            if wants_json_path(request.path):
                return json_error(400, message, code="bad_request")
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
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
                request._body = body
                request._stream = io.BytesIO(body)
            if _json_candidate(request) and json_too_deep(request.body, JSON_MAX_DEPTH):
                message = _("El JSON está anidado a más de %(n)s niveles.") % {"n": JSON_MAX_DEPTH}
                return json_error(400, message, code="json_too_deep", max_depth=JSON_MAX_DEPTH)
        return self.get_response(request)

    @staticmethod
    def _too_large(limit: int) -> HttpResponse:
        return json_error(413, default_message(413), code="payload_too_large", limit_bytes=limit)


def _json_candidate(request: HttpRequest) -> bool:
    """A body some view under /api/ or /webhooks/ may parse as JSON, whatever its content
    type (the web chat accepts text/plain, which spares browsers a preflight). Not a raw
    e-mail: its text may hold any number of brackets."""
    if not wants_json_path(request.path) or request.path.startswith(_RAW_BODY_PREFIXES):
        return False
    content_type = request.META.get("CONTENT_TYPE", "")
    return not content_type.startswith(("multipart/", "application/x-www-form-urlencoded"))


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether `body`, read as JSON, nests arrays/objects deeper than `limit` (or opens more
    than `limit` unclosed: Python's parser recurses into them before it finds the error).
    Escapes, then strings, are dropped; the depth is the running sum of +1 per opening and
    -1 per closing bracket, summed by numpy a megabyte at a time (a 20 MB upload takes
    ~0.1 s; a Python loop would take seconds)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    unescaped = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = unescaped.translate(None, _NOT_STRUCTURE)
    brackets = b"".join(structure.split(b'"')[::2]).translate(_STEPS)
    level = 0
    for start in range(0, len(brackets), _CHUNK):
        steps = np.frombuffer(
            brackets, dtype=np.int8, count=min(_CHUNK, len(brackets) - start), offset=start
        )
        running = np.cumsum(steps, dtype=np.int64) + level
        if int(running.max()) > limit:
            return True
        level = int(running[-1])
    return False


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
        from django.core.exceptions import PermissionDenied, SuspiciousOperation
        from django.http import Http404

        if isinstance(exception, Http404):
            return json_error(404, default_message(404))
        if isinstance(exception, PermissionDenied):
            return json_error(403, default_message(403))
        if isinstance(exception, SuspiciousOperation):
            status, body = suspicious_error(exception)
            return JsonResponse(body, status=status)
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
        scope: Scope
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
