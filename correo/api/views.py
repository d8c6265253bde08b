"""`POST /api/correo/ask`: the secretary's chat endpoint (staff session only).

Order of checks: authentication (a staff member's Django session with a tenant
membership; plus a valid Cloudflare Access token when configured), validation of `question`
and `history`, the 20-per-60-seconds limit, then the model. API keys are not accepted.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, permissions, serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response

from correo import access
from correo.mailbox import MailboxError, MailboxNotConnected
from correo.models import QUESTION_STORED_CHARS, ChatQuery
from correo.secretary import DeadlineExceeded, HistoryMessage, secretary_ask
from erp import ratelimit
from erp.api.errors import error_body
from erp.api.schema import StaffSessionScheme, error_serializer
from erp.api.views import TenantAPIView
from erp.llm.errors import LlmError, NoCredits, NotConfigured, Timeout
from erp.llm.gateway import default_provider_name
from erp.storable import storable_text
from erp.tenancy.authentication import StaffSessionAuthentication

logger = logging.getLogger(__name__)

QUESTION_MAX_CHARS = 2000
HISTORY_MAX_MESSAGES = 12
HISTORY_ROLES = ("user", "assistant")
HISTORY_ITEM_MAX_CHARS = 4000  # longer history messages are cut, not refused
RATE_LIMIT = 20
RATE_WINDOW_S = 60
CONNECT_URL = "/correo/zoho/connect"


class CorreoSessionAuthentication(StaffSessionAuthentication):
    """The staff session; a logged-in non-staff user is still identified (and refused with 403
    by the permission) instead of looking anonymous."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        result = super().authenticate(request)
        if result is not None:
            return result
        plain = SessionAuthentication.authenticate(self, request)
        if plain is None:
            return None
        request._request.tenant = None  # type: ignore[attr-defined]
        request._request.membership = None  # type: ignore[attr-defined]
        return plain[0], None

    def authenticate_header(self, request: Request) -> str:
        return 'Session realm="correo"'


class CorreoSessionScheme(StaffSessionScheme):
    target_class = CorreoSessionAuthentication
    name = "correoSession"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        definition = super().get_security_definition(auto_schema)
        definition["description"] += " API keys are not accepted here."
        return definition


class IsStaffMember(permissions.BasePermission):
    message = _("Solo para el personal con acceso a una empresa.")

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(
            user
            and user.is_authenticated
            and user.is_staff
            and getattr(request._request, "tenant", None) is not None
        )


class CloudflareAccess(permissions.BasePermission):
    message = _("El token de Cloudflare Access falta o no es válido.")

    def has_permission(self, request: Request, view: Any) -> bool:
        if not access.enabled():
            return True
        try:
            access.verify(request.headers.get(access.HEADER, ""), email=request.user.email)
        except access.AccessDenied as exc:
            logger.info("correo.access_denied", extra={"reason": exc.reason})
            raise exceptions.PermissionDenied(self.message, code="access_denied") from None
        return True


def _error(status: int, code: str, message: str, **extra: Any) -> Response:
    return Response(error_body(code, message, **extra), status=status)


def _validate(data: Any) -> tuple[str, list[HistoryMessage]] | Response:
    """The question and the filtered history, or a 400 naming the field."""
    if not isinstance(data, dict):
        return _error(400, "validation_error", _("El cuerpo debe ser un objeto JSON."))
    question = data.get("question")
    if question is None:
        return _error(400, "validation_error", _("Falta la pregunta."), field="question")
    if not isinstance(question, str):
        return _error(400, "validation_error", _("La pregunta debe ser texto."), field="question")
    # NUL and lone surrogates (JSON allows both) can be neither stored nor sent to the model.
    question = storable_text(question.strip())
    if not question:
        return _error(400, "validation_error", _("La pregunta está vacía."), field="question")
    if len(question) > QUESTION_MAX_CHARS:
        message = _("La pregunta supera los %(max)d caracteres.") % {"max": QUESTION_MAX_CHARS}
        return _error(400, "validation_error", message, field="question")
    raw_history = data.get("history", [])
    if raw_history is None:
        raw_history = []
    if not isinstance(raw_history, list):
        message = _("El historial debe ser una lista de mensajes.")
        return _error(400, "validation_error", message, field="history")
    history = [
        HistoryMessage(
            role=item["role"],
            content=storable_text(item["content"].strip()[:HISTORY_ITEM_MAX_CHARS]),
        )
        for item in raw_history
        if isinstance(item, dict)
        and item.get("role") in HISTORY_ROLES
        and isinstance(item.get("content"), str)
        and item["content"].strip()
    ]
    return question, history[-HISTORY_MAX_MESSAGES:]


def _record_telemetry(request: Request, question: str, tool_rounds: int, duration_ms: int) -> None:
    """Best effort: a failure is logged (without the question) and the answer still goes out."""
    try:
        with transaction.atomic():
            ChatQuery.objects.create(
                tenant=request._request.tenant,  # type: ignore[attr-defined]
                owner=request.user,
                question=question[:QUESTION_STORED_CHARS],
                tool_rounds=tool_rounds,
                duration_ms=duration_ms,
            )
    except DatabaseError as exc:
        logger.warning("correo.telemetry_failed", extra={"error": type(exc).__name__})


def _llm_error(exc: LlmError) -> Response:
    if isinstance(exc, NotConfigured):
        return _error(503, "llm_not_configured", _("El modelo de IA no está configurado."))
    if isinstance(exc, NoCredits):
        return _error(503, "llm_no_credits", _("La empresa no tiene crédito de IA."))
    if isinstance(exc, Timeout):
        return _error(502, "llm_timeout", _("El modelo tardó demasiado. Inténtalo de nuevo."))
    return _error(502, "llm_unavailable", _("El modelo no respondió. Inténtalo de nuevo."))


def _mailbox_error(exc: MailboxError) -> Response:
    if isinstance(exc, MailboxNotConnected):
        message = _("Tu buzón no está conectado. Conéctalo en %(url)s") % {"url": CONNECT_URL}
        return _error(503, "mailbox_not_connected", message, connect_url=CONNECT_URL)
    return _error(502, "mailbox_unavailable", _("Zoho Mail no respondió. Inténtalo de nuevo."))


def _deadline_error() -> Response:
    seconds = int(settings.CORREO_ASK_DEADLINE_SECONDS)
    message = _(
        "La consulta superó el tiempo máximo (%(s)d s) sin respuesta. Prueba con una pregunta "
        "más concreta."
    ) % {"s": seconds}
    return _error(504, "deadline_exceeded", message, deadline_s=seconds)


class AskView(TenantAPIView):
    authentication_classes = [CorreoSessionAuthentication]
    permission_classes = [IsStaffMember, CloudflareAccess]
    throttle_classes: list[Any] = []
    http_method_names = ["post", "options"]

    @extend_schema(
        summary="Ask the mailbox secretary",
        request=inline_serializer(
            "Ask",
            {
                "question": serializers.CharField(max_length=QUESTION_MAX_CHARS),
                "history": inline_serializer(
                    "AskHistoryMessage",
                    {
                        "role": serializers.ChoiceField(choices=HISTORY_ROLES),
                        "content": serializers.CharField(),
                    },
                    many=True,
                    required=False,
                ),
            },
        ),
        responses={
            200: inline_serializer(
                "AskAnswer",
                {
                    "answer": serializers.CharField(),
                    "tool_rounds": serializers.IntegerField(),
                    "duration_ms": serializers.IntegerField(),
                    "model": serializers.CharField(),
                },
            ),
            **{status: error_serializer() for status in (400, 401, 403, 429, 502, 503, 504)},
        },
    )
    def post(self, request: Request) -> Response:
        validated = _validate(request.data)
        if isinstance(validated, Response):
            return validated
        question, history = validated
        decision = ratelimit.hit(
            f"correo-ask:{request.user.pk}", limit=RATE_LIMIT, window_s=RATE_WINDOW_S
        )
        if not decision.allowed:
            message = _("Demasiadas preguntas. Espera %(s)d s.") % {"s": decision.retry_after_s}
            response = _error(429, "rate_limited", message, retry_after=decision.retry_after_s)
            response["Retry-After"] = str(decision.retry_after_s)
            return response
        if default_provider_name() == "offline":
            return _error(503, "llm_not_configured", _("El modelo de IA no está configurado."))
        try:
            result = secretary_ask(
                user=request.user, tenant=self.tenant, question=question, history=history
            )
        except LlmError as exc:
            return _llm_error(exc)
        except MailboxError as exc:
            return _mailbox_error(exc)
        except DeadlineExceeded:
            return _deadline_error()
        _record_telemetry(request, question, result.tool_rounds, result.duration_ms)
        return Response(
            {
                "answer": result.answer,
                "tool_rounds": result.tool_rounds,
                "duration_ms": result.duration_ms,
                "model": result.model,
            }
        )
