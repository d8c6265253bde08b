"""The staff chat page `GET /correo/` (the conversation lives only in the page's memory)."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from correo import access
from correo.api.views import CONNECT_URL, HISTORY_MAX_MESSAGES, QUESTION_MAX_CHARS
from correo.mailbox import mailbox_connected
from correo.secretary import latest_digest
from erp.tenancy.selectors import membership_for


@require_GET
@staff_member_required
@ensure_csrf_cookie
def chat_page(request: HttpRequest) -> HttpResponse:
    if access.enabled():
        try:
            access.verify(request.headers.get(access.HEADER, ""), email=request.user.email)
        except access.AccessDenied:
            return HttpResponseForbidden(_("El token de Cloudflare Access falta o no es válido."))
    membership = membership_for(request.user, request.headers.get("X-Tenant"))
    tenant = membership.tenant if membership else None
    context = {
        "tenant": tenant,
        "connected": bool(tenant and mailbox_connected(request.user, tenant)),
        "digest": latest_digest(request.user, tenant) if tenant else None,
        "connect_url": CONNECT_URL,
        "question_max": QUESTION_MAX_CHARS,
        "history_max": HISTORY_MAX_MESSAGES,
        "i18n": _page_texts(),
    }
    return render(request, "correo/chat.html", context)


def _page_texts() -> dict[str, str]:
    return {
        "you": _("Tú"),
        "secretary": _("Secretaria"),
        "meta": _("%(rounds)s rondas · %(seconds)s s"),
        "rate": _("Demasiadas preguntas seguidas. Vuelve a intentarlo en %(seconds)s s."),
        "timeout": _("El modelo o el buzón tardaron demasiado. Inténtalo de nuevo."),
        "disconnected": _("Tu buzón no está conectado."),
        "connect": _("Conectar Zoho Mail"),
        "empty": _("Escribe una pregunta."),
        "network": _("No se pudo contactar con el servidor."),
        "generic": _("Algo ha fallado."),
    }
