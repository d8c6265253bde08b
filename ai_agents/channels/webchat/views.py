"""HTTP surface of the web chat: `/widget.js`, the public `/api/webchat/{key}/...` endpoints
(CORS for the binding's allowed origins only) and the staff demo page `/webchat/demo`.

    GET  /api/webchat/{key}/config?lang=   -> {"lang", "texts", "appearance", ...} (no session)
    POST /api/webchat/{key}/sessions   {"token"?, "lang"?} -> {"token", "lang", "texts", ...}
    GET  /api/webchat/{key}/messages?after=<iso>   header X-Webchat-Token -> history + state
    POST /api/webchat/{key}/messages   {"text", "client_message_id"?, "option_id"?} -> SSE (token,
                                       citations, done, error) or JSON without
                                       `Accept: text/event-stream`; `option_id`: the chip clicked
                                       (its title is the text), kept in the message's metadata

The key is in the path so a CORS preflight (which carries no body and no token) is answered
for exactly the binding's origins. No cookies are involved (the token travels in a header), so
the views are exempt from CSRF and never send `Access-Control-Allow-Credentials`.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_safe

from ai_agents.api import sse
from ai_agents.channels.webchat import visitor as webchat
from ai_agents.channels.webchat.appearance import appearance_public
from ai_agents.models import ChannelBinding
from ai_agents.rules.options import ID_MAX
from ai_agents.services import rating
from ai_agents.services.typing import customer_typing_mark
from erp.api.errors import json_error
from erp.http_request import client_ip

WIDGET_PATH = Path(__file__).resolve().parents[2] / "static" / "ai_agents" / "widget.js"
TOKEN_HEADER = "X-Webchat-Token"
# Pages embed the unversioned /widget.js: a day fresh, a week stale while revalidating (ETag).
WIDGET_CACHE = "public, max-age=86400, stale-while-revalidate=604800"
CONFIG_CACHE = "public, max-age=60"
DEMO_CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
    "img-src 'self' https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

# HttpResponseBase: a message POST may answer with a stream (StreamingHttpResponse).
View = Callable[[HttpRequest, ChannelBinding], HttpResponseBase]


# --- /widget.js ---------------------------------------------------------------------------


@functools.cache
def _widget_source(compressed: bool) -> tuple[bytes, str]:
    """(body, ETag) of the script, gzipped or not (each representation its own ETag)."""
    body = WIDGET_PATH.read_bytes()
    tag = hashlib.sha256(body).hexdigest()[:20]
    if compressed:
        return gzip.compress(body, compresslevel=9, mtime=0), f'"{tag}-gz"'
    return body, f'"{tag}"'


def _accepts_gzip(request: HttpRequest) -> bool:
    for coding in request.headers.get("Accept-Encoding", "").split(","):
        name, _sep, params = coding.strip().partition(";")
        if name.strip().lower() == "gzip":
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


@require_safe
def widget_js(request: HttpRequest) -> HttpResponse:
    compressed = _accepts_gzip(request)
    body, etag = _widget_source(compressed)
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type="text/javascript; charset=utf-8")
        if compressed:
            response["Content-Encoding"] = "gzip"
    response["ETag"] = etag
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = WIDGET_CACHE
    # Lets embedders add Subresource Integrity (`crossorigin="anonymous"`).
    response["Access-Control-Allow-Origin"] = "*"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response


# --- CORS and auth ------------------------------------------------------------------------


def _own_origin(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


def _client_ip(request: HttpRequest) -> str:
    return client_ip(request)


def webchat_endpoint(*methods: str) -> Callable[[View], Callable[..., HttpResponseBase]]:
    """Looks up the binding by the key in the path, checks the Origin, answers preflights and
    adds the CORS headers (the request's own origin, never `*`)."""

    def decorate(view: View) -> Callable[..., HttpResponseBase]:
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, key: str) -> HttpResponseBase:
            binding = webchat.binding_by_key(key)
            if binding is None:
                return json_error(404, _("Este chat no existe o está desactivado."))
            origin = request.headers.get("Origin", "")
            # Browsers always send Origin on cross-origin requests; without one the request
            # is same-origin or not from a browser (which could forge it anyway).
            if origin and not webchat.origin_allowed(
                binding, origin, own_origin=_own_origin(request)
            ):
                return json_error(
                    403, _("Origen no permitido para este chat."), code="origin_not_allowed"
                )
            response: HttpResponseBase
            if request.method == "OPTIONS":
                response = HttpResponse(status=204)
                response["Access-Control-Allow-Methods"] = ", ".join([*methods, "OPTIONS"])
                response["Access-Control-Allow-Headers"] = f"Content-Type, {TOKEN_HEADER}"
                response["Access-Control-Max-Age"] = "600"
            elif request.method not in methods:
                response = json_error(405, _("Método no permitido."))
                response["Allow"] = ", ".join([*methods, "OPTIONS"])
            else:
                response = view(request, binding)
            if origin:
                response["Access-Control-Allow-Origin"] = origin
                response["Access-Control-Expose-Headers"] = "Retry-After"
            patch_vary_headers(response, ["Origin"])
            return response

        return wrapper

    return decorate


def _session(request: HttpRequest, binding: ChannelBinding) -> webchat.Session | None:
    try:
        return webchat.session_read(binding=binding, token=request.headers.get(TOKEN_HEADER, ""))
    except webchat.SessionInvalid:
        return None


def _unauthorized() -> JsonResponse:
    return json_error(
        401, _("La sesión del chat no es válida o ha caducado."), code="session_invalid"
    )


def _limited(result: Any) -> JsonResponse:
    response = json_error(
        429,
        _("Demasiadas solicitudes; inténtelo de nuevo en %(s)s s.") % {"s": result.retry_after_s},
        code="rate_limited",
        retry_after=result.retry_after_s,
    )
    response["Retry-After"] = str(result.retry_after_s)
    return response


def _json_body(request: HttpRequest) -> dict[str, Any] | None:
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


# --- endpoints ----------------------------------------------------------------------------


@webchat_endpoint("POST")
def session_view(request: HttpRequest, binding: ChannelBinding) -> HttpResponse:
    data = _json_body(request)
    if data is None:
        return json_error(400, _("El cuerpo debe ser un objeto JSON."))
    previous = data.get("token")
    session = None
    if isinstance(previous, str) and previous:
        try:
            session = webchat.session_read(binding=binding, token=previous)
        except webchat.SessionInvalid:
            session = None
    if session is None:  # only new visitors count against the address
        limited = webchat.limit_hit("ip-sessions", _client_ip(request), webchat.IP_SESSIONS)
        if not limited.allowed:
            return _limited(limited)
    session, token = webchat.session_start(binding=binding, session=session)
    lang = webchat.language_pick(str(data.get("lang") or ""))
    return JsonResponse(
        {
            "token": token,
            **_widget_config(binding, lang),
            **webchat.conversation_state(session),
        }
    )


@webchat_endpoint("GET")
def config_view(request: HttpRequest, binding: ChannelBinding) -> HttpResponse:
    """`?lang=`: the look and the texts, before any session (the launcher shows on page load;
    a session starts only when the visitor opens the chat)."""
    limited = webchat.limit_hit("ip-config", _client_ip(request), webchat.IP_CONFIGS)
    if not limited.allowed:
        return _limited(limited)
    response = JsonResponse(
        _widget_config(binding, webchat.language_pick(request.GET.get("lang", "")))
    )
    # Short: an owner's change shows within a minute (Vary: Origin is added by the decorator).
    response["Cache-Control"] = CONFIG_CACHE
    return response


def _widget_config(binding: ChannelBinding, lang: str) -> dict[str, Any]:
    own = binding.appearance if isinstance(binding.appearance, dict) else {}
    return {
        "lang": lang,
        "agent": {"name": binding.agent.name},
        "texts": webchat.widget_texts(lang, binding.agent.name, own=own),
        "appearance": appearance_public(own),
        "max_chars": webchat.TEXT_MAX_CHARS,
        "poll_interval_ms": webchat.POLL_INTERVAL_MS,
    }


@webchat_endpoint("GET", "POST")
def messages_view(request: HttpRequest, binding: ChannelBinding) -> HttpResponseBase:
    session = _session(request, binding)
    if session is None:
        return _unauthorized()
    if request.method == "POST":
        return _message_post(request, session)
    limited = webchat.limit_hit("visitor-reads", session.visitor_id, webchat.VISITOR_READS)
    if not limited.allowed:
        return _limited(limited)
    raw_after = request.GET.get("after", "")
    after = parse_datetime(raw_after) if raw_after else None
    if raw_after and (after is None or after.tzinfo is None):
        return json_error(400, _("`after` debe ser una fecha ISO 8601 con zona horaria."))
    messages = webchat.messages_after(session, after)
    webchat.messages_mark(
        session, [m["id"] for m in messages if m["role"] == "assistant"], "delivered"
    )
    cursor = messages[-1]["created_at"] if messages else (raw_after or None)
    return JsonResponse(
        {"messages": messages, "cursor": cursor, **webchat.conversation_state(session)}
    )


def _message_post(request: HttpRequest, session: webchat.Session) -> HttpResponseBase:
    data = _json_body(request)
    if data is None:
        return json_error(400, _("El cuerpo debe ser un objeto JSON."))
    text = data.get("text")
    text = text.strip() if isinstance(text, str) else ""
    if not text:
        return json_error(400, _("Escriba un mensaje."), code="text_required")
    if len(text) > webchat.TEXT_MAX_CHARS:
        return json_error(
            400,
            _("El mensaje supera los %(n)s caracteres.") % {"n": webchat.TEXT_MAX_CHARS},
            code="text_too_long",
            max_chars=webchat.TEXT_MAX_CHARS,
        )
    client_id = data.get("client_message_id")
    client_id = client_id if isinstance(client_id, str) else ""
    option_id = data.get("option_id", "")
    if not isinstance(option_id, str) or len(option_id) > ID_MAX:
        return json_error(
            400,
            _("«option_id» debe ser un texto de hasta %(n)s caracteres.") % {"n": ID_MAX},
            code="option_id_invalid",
        )
    for scope, subject, rule in (
        ("visitor-msgs", session.visitor_id, webchat.VISITOR_MESSAGES),
        ("ip-msgs", _client_ip(request), webchat.IP_MESSAGES),
    ):
        limited = webchat.limit_hit(scope, subject, rule)
        if not limited.allowed:
            return _limited(limited)
    agent = session.binding.agent
    inbound = webchat.visitor_inbound(session, text, client_id, option_id=option_id)
    present = functools.partial(webchat.reply_present, session)
    if sse.wants_stream(request) and agent.processing["streaming_enabled"]:
        return sse.stream_response(agent, inbound, present)
    from ai_agents.conversations.engine import message_process

    body = present(message_process(agent=agent, inbound=inbound).as_record())
    limited_body = body.pop("rate_limited", None)
    if limited_body is not None:
        retry = int(limited_body["retry_after_s"])
        response = json_error(
            429,
            _("Demasiados mensajes en esta conversación."),
            code="rate_limited",
            retry_after=retry,
        )
        response["Retry-After"] = str(retry)
        return response
    return JsonResponse(body)


@webchat_endpoint("POST")
def typing_view(request: HttpRequest, binding: ChannelBinding) -> HttpResponse:
    """The visitor types (the widget pings at most every few seconds): the staff see it."""
    session = _session(request, binding)
    if session is None:
        return _unauthorized()
    limited = webchat.limit_hit("visitor-typing", session.visitor_id, webchat.VISITOR_TYPING)
    if not limited.allowed:
        return _limited(limited)
    conversation = webchat.current_conversation(session)
    if conversation is None or conversation.status not in conversation.OPEN_STATUSES:
        return JsonResponse({"typing": False})
    customer_typing_mark(tenant_id=conversation.tenant_id, conversation_id=conversation.pk)
    return JsonResponse({"typing": True})


@webchat_endpoint("POST")
def read_view(request: HttpRequest, binding: ChannelBinding) -> HttpResponse:
    """`{"ids": [...]}`: the replies the visitor has seen with the panel open."""
    session = _session(request, binding)
    if session is None:
        return _unauthorized()
    data = _json_body(request)
    ids = data.get("ids") if data is not None else None
    if not isinstance(ids, list) or not ids or len(ids) > webchat.MARK_MAX_IDS:
        return json_error(
            400,
            _("Indique en «ids» una lista de 1 a %(n)s mensajes.") % {"n": webchat.MARK_MAX_IDS},
        )
    wanted = [i for i in ids if isinstance(i, str) and _uuid_like(i)]
    return JsonResponse({"read": webchat.messages_mark(session, wanted, "read")})


def _uuid_like(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@webchat_endpoint("POST")
def rating_view(request: HttpRequest, binding: ChannelBinding) -> HttpResponse:
    """`{"rating": 1-5, "text"?}`: the visitor rates the conversation that was just closed."""
    session = _session(request, binding)
    if session is None:
        return _unauthorized()
    data = _json_body(request)
    if data is None:
        return json_error(400, _("El cuerpo debe ser un objeto JSON."))
    conversation = webchat.current_conversation(session)
    try:
        if conversation is None or not webchat.conversation_state(session)["rating_pending"]:
            if conversation is not None and conversation.satisfaction_rating is not None:
                raise rating.AlreadyRated(_("Esta conversación ya tiene una valoración."))
            raise rating.RatingUnavailable(_("No hay ninguna conversación cerrada que valorar."))
        rating.conversation_rate(
            conversation=conversation, rating=data.get("rating"), text=data.get("text", "")
        )
    except rating.RatingError as error:
        return json_error(error.status, error.message, code=error.code, **error.extra)
    return JsonResponse({"rated": True, **webchat.conversation_state(session)})


# --- demo page ----------------------------------------------------------------------------


@require_GET
@staff_member_required
def demo_page(request: HttpRequest) -> HttpResponse:
    """The widget on a page of ours with a strict CSP, for trying a binding (staff only: it
    shows a tenant's public key, which is public anyway, but the page is not for visitors)."""
    bindings = ChannelBinding.objects.filter(type=ChannelBinding.Type.WEBCHAT, is_active=True)
    key = request.GET.get("key", "")
    binding = bindings.filter(token=key).first() if key else bindings.first()
    if binding is None:
        raise Http404
    response = render(
        request,
        "ai_agents/webchat_demo.html",
        {"binding": binding, "lang": request.GET.get("lang", "")},
    )
    response["Content-Security-Policy"] = DEMO_CSP
    return response
