"""Connecting a mailbox to Zoho Mail: `GET /correo/zoho/connect` -> Zoho consent -> callback.

The `state` is random, kept in the session (bound to it), single use and valid 10 minutes.
Errors are a page that says what happened and how to retry, never a 500.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from correo.zoho.errors import (
    ZohoAuthError,
    ZohoError,
    ZohoNotConnected,
    ZohoRateLimited,
)
from correo.zoho.oauth import client_credentials, consent_url, known_accounts_server
from correo.zoho.services import zoho_connect_with_code
from erp.tenancy.models import Membership
from erp.tenancy.selectors import membership_for

logger = logging.getLogger("correo.zoho")

SESSION_KEY = "correo_zoho_oauth"
STATE_MAX_AGE_SECONDS = 600
AFTER_CONNECT_URL = "/correo/"


def _error(request: HttpRequest, status: int, message: str) -> HttpResponse:
    return render(
        request,
        "correo/zoho_error.html",
        {"message": message, "connect_url": reverse("correo-zoho-connect")},
        status=status,
    )


def _staff_membership(request: HttpRequest) -> tuple[HttpResponse | None, Membership | None]:
    user: Any = request.user
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path()), None
    membership = membership_for(user, request.GET.get("tenant")) if user.is_staff else None
    if membership is None:
        message = _("Solo el personal de una empresa puede conectar su buzón.")
        return _error(request, 403, message), None
    return None, membership


def _redirect_uri(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("correo-zoho-callback"))


@require_GET
@never_cache
def zoho_connect(request: HttpRequest) -> HttpResponse:
    denied, membership = _staff_membership(request)
    if denied is not None:
        return denied
    assert membership is not None
    try:
        client_credentials()
    except ZohoNotConnected:
        message = _("Zoho Mail no está configurado (faltan ZOHO_CLIENT_ID y ZOHO_CLIENT_SECRET).")
        return _error(request, 503, message)
    state = secrets.token_urlsafe(32)
    request.session[SESSION_KEY] = {
        "state": state,
        "tenant_id": membership.tenant_id,
        "created": time.time(),
    }
    accounts = settings.ZOHO_ACCOUNTS_BASE_URL.rstrip("/")
    url = consent_url(accounts_server=accounts, redirect_uri=_redirect_uri(request), state=state)
    return HttpResponseRedirect(url)


@require_GET
@never_cache
def zoho_callback(request: HttpRequest) -> HttpResponse:
    denied, _membership = _staff_membership(request)
    if denied is not None:
        return denied
    pending = request.session.pop(SESSION_KEY, None)  # single use, whatever happens next
    state = request.GET.get("state", "")
    if (
        not isinstance(pending, dict)
        or not state
        or not hmac.compare_digest(str(pending.get("state", "")).encode(), state.encode())
        or time.time() - float(pending.get("created", 0)) > STATE_MAX_AGE_SECONDS
    ):
        message = _("El enlace de conexión no es válido o ha caducado. Vuelve a intentarlo.")
        return _error(request, 400, message)
    if request.GET.get("error"):
        return _error(request, 400, _("Zoho no ha concedido el acceso al buzón."))
    code = request.GET.get("code", "")
    if not code:
        return _error(request, 400, _("Zoho no ha enviado el código de autorización."))
    membership = (
        Membership.objects.unscoped()
        .filter(user=request.user, tenant_id=pending.get("tenant_id"), tenant__is_active=True)
        .select_related("tenant")
        .first()
    )
    if membership is None:
        return _error(request, 403, _("Ya no perteneces a la empresa para la que conectabas."))
    accounts_server = known_accounts_server(request.GET.get("accounts-server", ""))
    try:
        conn = zoho_connect_with_code(
            owner=request.user,
            tenant=membership.tenant,
            code=code,
            redirect_uri=_redirect_uri(request),
            accounts_server=accounts_server,
        )
    except ZohoNotConnected:
        return _error(request, 503, _("Zoho Mail no está configurado correctamente."))
    except ZohoAuthError:
        return _error(request, 400, _("Zoho ha rechazado la autorización. Vuelve a conectar."))
    except ZohoRateLimited:
        return _error(request, 429, _("Zoho pide esperar unos minutos antes de reintentar."))
    except ZohoError as error:
        logger.warning("correo.zoho.connect_failed", extra={"zoho_error": type(error).__name__})
        return _error(request, 502, _("Zoho Mail no responde ahora. Inténtalo más tarde."))
    messages.success(
        request, _("Buzón conectado: %(email)s") % {"email": conn.email or conn.account_id}
    )
    return HttpResponseRedirect(AFTER_CONNECT_URL)
