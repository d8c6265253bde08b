"""What the customer hears when a person takes over, hands back or closes the conversation.

One notice per event: a `system` message of the conversation (never in the model's history,
which reads user and assistant messages) with `metadata.customer_notice` = the event. The web
chat shows it in its own style; WhatsApp and e-mail get it as a message when the tenant's
HandoffSettings.customer_notices is on (WhatsApp only inside the 24-hour window: outside it no
free text may go). A repeated event (a double click, a retry, a claim by the holder, a
reassignment while a person already answers) posts nothing: a notice is skipped when the last
one of the conversation was the same event, and a unique `channel_message_id`
("notice:<conversation>:<n>") makes two concurrent posts one.

Texts: the tenant's (HandoffSettings.notice_<event>_<es|en>) or the defaults, in the
customer's language (guessed from their messages like the engine's fixed replies; the tenant's
language when they give no evidence). At close, when rating is on, the notice carries the
rating offer (`metadata.rating_offer`; WhatsApp: an interactive list 1-5; e-mail: a line).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, override

from ai_agents.models import Conversation, HandoffSettings, Message
from ai_agents.services.inbox_events import inbox_event_publish
from erp.celery import enqueue
from erp.llm.language import customer_language

logger = logging.getLogger(__name__)

CLAIM, RELEASE, CLOSE = "claim", "release", "close"
RATING_THANKS, COMMENT_THANKS = "rating_thanks", "comment_thanks"
EVENTS = (CLAIM, RELEASE, CLOSE, RATING_THANKS, COMMENT_THANKS)
WEBCHAT = "webchat"
PUSH_CHANNELS = ("whatsapp", "email")
WHATSAPP_WINDOW = timedelta(hours=24)
DEFAULTS = {
    CLAIM: gettext_noop("Una persona del equipo le atiende a partir de ahora."),
    RELEASE: gettext_noop(
        "La persona del equipo le devuelve al asistente, que sigue a su servicio."
    ),
    CLOSE: gettext_noop("Hemos cerrado esta conversación. ¡Gracias por escribirnos!"),
    RATING_THANKS: gettext_noop(
        "¡Gracias por su valoración! Si quiere, escríbanos ahora un comentario."
    ),
    COMMENT_THANKS: gettext_noop("Gracias por su comentario."),
}
RATING_ASK = gettext_noop(
    "¿Cómo valoraría la atención? Responda con un número del 1 (mala) al 5 (excelente)."
)
RATING_LABELS = {
    1: gettext_noop("Mala"),
    2: gettext_noop("Regular"),
    3: gettext_noop("Correcta"),
    4: gettext_noop("Buena"),
    5: gettext_noop("Excelente"),
}


def handoff_settings(tenant_id: Any) -> HandoffSettings | None:
    return HandoffSettings.objects.for_tenant(tenant_id).first()


def customer_language_of(conversation: Conversation) -> str:
    """The customer's language from their latest messages, else the tenant's."""
    texts = list(
        Message.objects.for_tenant(conversation.tenant_id)
        .filter(conversation_id=conversation.pk, role=Message.Role.USER)
        .order_by("-created_at")
        .values_list("content", flat=True)[:5]
    )
    tenant_language = (
        Conversation.objects.for_tenant(conversation.tenant_id)
        .filter(pk=conversation.pk)
        .values_list("tenant__language", flat=True)
        .first()
    )
    return customer_language(texts, default=str(tenant_language or settings.LANGUAGE_CODE)[:2])


def notice_text(prefs: HandoffSettings | None, event: str, language: str) -> str:
    custom = str(getattr(prefs, f"notice_{event}_{language}", "") or "").strip()
    if custom:
        return custom
    with override(language):
        return _(DEFAULTS[event])


def rating_list(language: str) -> dict[str, Any]:
    """The WhatsApp interactive list of the rating offer (the body text is the message's)."""
    with override(language):
        rows = [
            {"id": f"rating:{n}", "title": f"{n} {'★' * n}", "description": _(RATING_LABELS[n])}
            for n in range(5, 0, -1)
        ]
        return {
            "type": "list",
            "action": {
                "button": _("Valorar"),
                "sections": [{"title": _("Valoración"), "rows": rows}],
            },
        }


def _reaches_customer(conversation: Conversation, prefs: HandoffSettings | None) -> bool:
    if conversation.channel == WEBCHAT:
        return True
    if conversation.channel not in PUSH_CHANNELS or conversation.binding_id is None:
        return False
    if prefs is None or not prefs.customer_notices:
        return False
    if conversation.channel == "whatsapp":
        last = conversation.last_inbound_at
        return last is not None and timezone.now() - last < WHATSAPP_WINDOW
    return True


def _last_notice(conversation: Conversation) -> tuple[str, int]:
    rows = Message.objects.for_tenant(conversation.tenant_id).filter(
        conversation_id=conversation.pk,
        role=Message.Role.SYSTEM,
        metadata__has_key="customer_notice",
    )
    last = rows.order_by("-created_at").values_list("metadata", flat=True).first()
    return (str((last or {}).get("customer_notice") or ""), rows.count())


def customer_notice_post(*, conversation: Conversation, event: str) -> Message | None:
    """Stores the notice of `event` and, on WhatsApp / e-mail, sends it once committed.
    None when nothing is posted (not enabled, outside the window, a repeat)."""
    prefs = handoff_settings(conversation.tenant_id)
    if event not in EVENTS or not _reaches_customer(conversation, prefs):
        return None
    last, count = _last_notice(conversation)
    if last == event:
        return None
    language = customer_language_of(conversation)
    text = notice_text(prefs, event, language)
    metadata: dict[str, Any] = {"customer_notice": event, "language": language}
    if event == CLOSE and (prefs is None or prefs.rating_request):
        metadata["rating_offer"] = True
        if conversation.channel in PUSH_CHANNELS:
            with override(language):
                text = f"{text}\n\n{_(RATING_ASK)}"
        if conversation.channel == "whatsapp":
            metadata["wa_interactive"] = rating_list(language)
    message = _notice_store(conversation, text, metadata, key=f"notice:{conversation.pk}:{count}")
    if message is None:
        return None
    if metadata.get("rating_offer"):
        _rating_offer_record(conversation, message)
    if conversation.channel in PUSH_CHANNELS:
        message_id = str(message.pk)
        transaction.on_commit(lambda: enqueue("ai_agents.handoff_reply_deliver", message_id))
    inbox_event_publish(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, kind="message"
    )
    logger.info(
        "handoff.customer_notice",
        extra={"conversation_id": str(conversation.pk), "event": event},
    )
    return message


def _notice_store(
    conversation: Conversation, text: str, metadata: dict[str, Any], *, key: str
) -> Message | None:
    try:
        with transaction.atomic():
            return Message.objects.for_tenant(conversation.tenant_id).create(
                tenant_id=conversation.tenant_id,
                conversation_id=conversation.pk,
                agent_id=conversation.agent_id,
                role=Message.Role.SYSTEM,
                content=text,
                metadata=metadata,
                channel_message_id=key,
                created_at=timezone.now(),
            )
    except IntegrityError:  # the same notice, posted at the same time by another request
        return None


def _rating_offer_record(conversation: Conversation, message: Message) -> None:
    """The offer's time, read when the customer's answer arrives (ai_agents.services.rating)."""
    rows = Conversation.objects.for_tenant(conversation.tenant_id).filter(pk=conversation.pk)
    with transaction.atomic():
        row = rows.select_for_update().first()
        if row is None:
            return
        data = dict(row.channel_data or {})
        data["rating_offer"] = {"at": message.created_at.isoformat(), "message_id": str(message.pk)}
        rows.update(channel_data=data)
