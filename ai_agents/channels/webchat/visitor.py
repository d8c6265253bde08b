"""The web chat: a visitor on a customer's site talks to an agent through `/widget.js`.

Trust model. The binding's public key (`ChannelBinding.token`) is published in the page, so it
proves nothing by itself: a browser request must also come from one of the binding's
`allowed_origins` (browsers always send `Origin` on cross-origin requests and scripts cannot
forge it). `session_start` then hands the visitor a session token signed with SECRET_KEY that
names the binding and a random visitor id; every later call carries it. The visitor id is the
conversation thread, so a token can only ever read its own binding's (and so its own
tenant's) thread, and a forged or expired token is refused.

No adapter is registered: the widget pulls. Replies stream back on the POST (SSE); a person's
replies from the staff inbox (`Message.author` set) reach the visitor when the widget polls
`messages_after`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core import signing
from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import override

from ai_agents.channels.webchat.origins import origin_matches, origin_normalize
from ai_agents.conversations.inbound import Inbound, inbound_clean
from ai_agents.conversations.option_reply import typed_option_pick
from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.rules.delivery_labels import RANK, status_moves_forward
from ai_agents.rules.options import options_clean, options_of
from ai_agents.services.inbox_events import inbox_event_publish
from ai_agents.services.typing import staff_typing
from erp import ratelimit

CHANNEL = "webchat"
SESSION_SALT = "ai_agents.webchat.session"
SESSION_MAX_AGE_S = 30 * 24 * 3600  # a returning visitor's token is renewed on each visit
TEXT_MAX_CHARS = 4000
POLL_INTERVAL_MS = 4000
HISTORY_MAX_MESSAGES = 200
LANGUAGES = ("es", "en")

# (limit, window seconds). Module constants so a test can lower them.
VISITOR_MESSAGES = (12, 60)
IP_MESSAGES = (60, 60)
IP_SESSIONS = (30, 600)
IP_CONFIGS = (120, 60)  # one per page view (browsers cache it a minute)
VISITOR_READS = (60, 60)
VISITOR_TYPING = (30, 60)  # the widget pings every 3 s at most while the visitor types


class SessionInvalid(Exception):
    """Missing, forged, expired, or for another binding: 401."""


@dataclass(frozen=True)
class Session:
    binding: ChannelBinding
    visitor_id: str

    @property
    def thread_id(self) -> str:
        return f"wc-{self.visitor_id}"

    @property
    def contact(self) -> dict[str, str]:
        return {"external_id": f"webchat:{self.visitor_id}"}


# --- binding and origin -------------------------------------------------------------------


def binding_by_key(key: str) -> ChannelBinding | None:
    """The active web chat binding with this public key (any tenant: the key is the router).
    An agent switched off still takes messages: they wait in the staff inbox."""
    if not key or len(key) > 64:
        return None
    return (
        ChannelBinding.objects.unscoped()
        .select_related("agent", "tenant")
        .filter(token=key, type=ChannelBinding.Type.WEBCHAT, is_active=True)
        .first()
    )


def origin_allowed(binding: ChannelBinding, origin: str, *, own_origin: str = "") -> bool:
    """True for an origin the binding's `allowed_origins` admit (the rule is in `origins`) or
    our own origin (the demo page). A request without `Origin` is not a cross-origin browser
    request and is not checked here."""
    wanted = origin_normalize(origin)
    if not wanted:
        return False
    if own_origin and wanted == origin_normalize(own_origin):
        return True
    return origin_matches(wanted, binding.allowed_origins or [])


# --- sessions -----------------------------------------------------------------------------


def session_start(
    *, binding: ChannelBinding, session: Session | None = None
) -> tuple[Session, str]:
    """A fresh token for `session` (a returning visitor: history survives, expiry slides) or
    for a new visitor."""
    if session is None or session.binding.pk != binding.pk:
        session = Session(binding=binding, visitor_id=secrets.token_urlsafe(16))
    payload = {"b": str(binding.pk), "v": session.visitor_id}
    token = signing.TimestampSigner(salt=SESSION_SALT).sign_object(payload, compress=False)
    return session, token


def session_read(*, binding: ChannelBinding, token: str) -> Session:
    if not token or len(token) > 512:
        raise SessionInvalid
    try:
        payload = signing.TimestampSigner(salt=SESSION_SALT).unsign_object(
            token, max_age=SESSION_MAX_AGE_S
        )
    except signing.BadSignature:  # includes SignatureExpired
        raise SessionInvalid from None
    if not isinstance(payload, dict) or payload.get("b") != str(binding.pk):
        raise SessionInvalid
    visitor_id = payload.get("v")
    if not isinstance(visitor_id, str) or not visitor_id:
        raise SessionInvalid
    return Session(binding=binding, visitor_id=visitor_id)


# --- reads --------------------------------------------------------------------------------


def _thread_conversations(session: Session) -> Any:
    binding = session.binding
    return Conversation.objects.for_tenant(binding.tenant_id).filter(
        agent_id=binding.agent_id, channel=CHANNEL, channel_conversation_id=session.thread_id
    )


def conversation_state(session: Session) -> dict[str, Any]:
    """Who answers the visitor now: `bot`, `waiting` (escalated, nobody has it yet) or `human`
    (a person holds it). A closed conversation reads as `bot`: the next message opens a new one."""
    current = (
        _thread_conversations(session)
        .order_by("-started_at")
        .values("pk", "status", "assigned_to_id", "satisfaction_rating", "channel_data")
        .first()
    )
    status = current["status"] if current else Conversation.Status.ACTIVE
    held = bool(current and current["assigned_to_id"])
    if status in Conversation.OPEN_STATUSES and held:
        state = "human"
    elif status == Conversation.Status.ESCALATED:
        state = "waiting"
    else:
        state = "bot"
    offered = bool(current and (current["channel_data"] or {}).get("rating_offer"))
    closed = status == Conversation.Status.CLOSED
    return {
        "state": state,
        "human": state == "human",
        "conversation_status": status,
        # The close asked for a rating and none was given yet: the widget shows the survey.
        "rating_pending": closed and offered and current["satisfaction_rating"] is None,
        "rated": bool(current and current["satisfaction_rating"] is not None),
        "staff_typing": bool(current and status in Conversation.OPEN_STATUSES)
        and staff_typing(current["pk"]),
    }


def current_conversation(session: Session) -> Conversation | None:
    """The thread's latest conversation (open, or the one that just ended)."""
    return _thread_conversations(session).order_by("-started_at").first()


def message_public(message: Message) -> dict[str, Any]:
    """What the visitor may see of a message: never the staff member's e-mail or usage."""
    author = message.author
    return {
        "id": str(message.pk),
        "role": message.role,
        "text": message.content,
        "created_at": message.created_at.isoformat(),
        "human": message.author_id is not None,
        "author_name": (author.first_name if author is not None else "") or "",
        # A customer notice (a person took over, handed back, closed): shown in its own style.
        "notice": str((message.metadata or {}).get("customer_notice") or ""),
        # The choices a bot answer offered (chips under the latest one).
        "options": options_of(message.metadata) if message.role == Message.Role.ASSISTANT else [],
    }


def messages_after(session: Session, after: datetime | None) -> list[dict[str, Any]]:
    """The thread's visible messages (every conversation of it, oldest first), after `after`."""
    binding = session.binding
    rows = (
        Message.objects.for_tenant(binding.tenant_id)
        .filter(conversation__in=_thread_conversations(session).values("pk"))
        .filter(
            Q(role__in=[Message.Role.USER, Message.Role.ASSISTANT])
            | Q(role=Message.Role.SYSTEM, metadata__has_key="customer_notice")
        )
        .select_related("author")
    )
    if after is not None:
        rows = rows.filter(created_at__gt=after).order_by("created_at")[:HISTORY_MAX_MESSAGES]
        return [message_public(m) for m in rows]
    latest = rows.order_by("-created_at")[:HISTORY_MAX_MESSAGES]
    return [message_public(m) for m in reversed(latest)]


# --- writes -------------------------------------------------------------------------------


MARK_MAX_IDS = 200


def messages_mark(session: Session, ids: list[str], status: str) -> int:
    """The team's and the bot's messages of this thread reached the widget ("delivered": it
    fetched them) or were shown with the panel open ("read"). Only forward (read stays read);
    "delivery" events for the staff pages. Returns how many moved."""
    if not ids:
        return 0
    rows = Message.objects.for_tenant(session.binding.tenant_id).filter(
        pk__in=ids[:MARK_MAX_IDS],
        conversation__in=_thread_conversations(session).values("pk"),
        role=Message.Role.ASSISTANT,
        delivery_status__in=[s for s in RANK if status_moves_forward(s, status)],
    )
    conversations = set(rows.values_list("conversation_id", flat=True))
    if not conversations:
        return 0
    moved = rows.update(delivery_status=status)
    for conversation_id in conversations:
        inbox_event_publish(
            tenant_id=session.binding.tenant_id, conversation_id=conversation_id, kind="delivery"
        )
    return moved


def visitor_inbound(
    session: Session, text: str, client_message_id: str = "", *, option_id: str = ""
) -> Inbound:
    """The pipeline input for one visitor message. A client id makes a retried POST return the
    stored result; it is namespaced by visitor so nobody can replay another visitor's id.
    `option_id`: the chip the visitor clicked (its title is `text`); without one, a typed "2"
    or title of the last answer's chips chooses that chip all the same."""
    message_id = None
    if client_message_id:
        message_id = f"webchat:{session.visitor_id}:{client_message_id[:80]}"
    metadata = {"binding_id": str(session.binding.pk)}
    if option_id:
        metadata["option_id"] = option_id
    else:
        text, chosen = typed_option_pick(
            binding=session.binding, channel=CHANNEL, thread_id=session.thread_id, text=text
        )
        metadata.update(chosen)
    return inbound_clean(
        Inbound(
            text=text,
            contact=session.contact,
            channel=CHANNEL,
            thread_id=session.thread_id,
            channel_message_id=message_id,
            metadata=metadata,
            binding=session.binding,
        )
    )


def reply_present(session: Session, body: dict[str, Any]) -> dict[str, Any]:
    """The pipeline result as the visitor sees it (runs in the pipeline's thread: it reads the
    state). Keeps `rate_limited` for the SSE relay; drops usage, costs and escalation reasons."""
    reply = body.get("reply")
    shown: dict[str, Any] = {
        "message_id": body.get("message_id"),
        "reply": None
        if not reply
        else {
            "id": reply["id"],
            "text": reply["text"],
            "citations": [{"title": c.get("title", "")} for c in reply.get("citations") or []],
            "options": options_clean(reply.get("options")),
        },
        **conversation_state(session),
    }
    if "rate_limited" in body:
        shown["rate_limited"] = body["rate_limited"]
    return shown


# --- limits -------------------------------------------------------------------------------


def limit_hit(scope: str, subject: str, rule: tuple[int, int]) -> ratelimit.LimitResult:
    limit, window = rule
    return ratelimit.hit(f"webchat:{scope}:{subject}", limit=limit, window_s=window)


# --- texts --------------------------------------------------------------------------------


def language_pick(requested: str) -> str:
    code = (requested or "").strip().lower()[:2]
    return code if code in LANGUAGES else "es"


def widget_texts(
    lang: str, agent_name: str, *, own: dict[str, str] | None = None
) -> dict[str, str]:
    """Every string the widget shows, in the visitor's language (Spanish source strings).
    `own`: the binding's appearance; its title, greeting and launcher text (written by the
    owner in one language) replace the defaults."""
    own = own or {}
    with override(lang):
        return {
            "open": own.get("launcher_text") or _("Abrir el chat"),
            "close": _("Cerrar el chat"),
            "title": own.get("title") or agent_name,
            "greeting": own.get("greeting")
            or _("¡Hola! Soy %(name)s. ¿En qué puedo ayudarle?") % {"name": agent_name},
            "input_label": _("Escriba su mensaje"),
            "placeholder": _("Escriba su mensaje…"),
            "send": _("Enviar"),
            "you": _("Usted"),
            "bot": agent_name,
            "person": _("Persona del equipo"),
            "options": _("Opciones"),
            "state_human": _("Le atiende una persona"),
            "state_waiting": _("Le pasamos con una persona; le atenderá en breve"),
            "delivered_to_person": _("Su mensaje ha llegado a la persona que le atiende."),
            "error": _("No se pudo enviar el mensaje. Inténtelo de nuevo."),
            "rate_limited": _("Demasiados mensajes. Espere %(s)s s.") % {"s": "{s}"},
            "too_long": _("El mensaje es demasiado largo."),
            "unavailable": _("El chat no está disponible ahora."),
            "unread": _("Mensajes nuevos: %(n)s") % {"n": "{n}"},
            "staff_typing": _("Una persona del equipo está escribiendo…"),
            "rating_question": _("¿Cómo valoraría la atención recibida?"),
            "rating_star": _("%(n)s de 5") % {"n": "{n}"},
            "rating_low": _("1: mala"),
            "rating_high": _("5: excelente"),
            "rating_comment": _("Comentario (opcional)"),
            "rating_send": _("Enviar valoración"),
            "rating_thanks": _("¡Gracias por su valoración!"),
            "rating_required": _("Elija una puntuación del 1 al 5."),
        }
