"""A voice note nobody could hear gets a fixed reply asking the customer to write, without a
model call (`metadata["media"]["ask_to_write"]`, set by `ai_agents.services.whatsapp_media`)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy, override

from ai_agents.models import Message

ASK_TO_WRITE = gettext_lazy(
    "Lo siento, no he podido escuchar tu mensaje de voz. ¿Podrías escribirme lo que necesitas?"
)


def ask_to_write_reply(message: Message) -> str | None:
    """The reply in the customer's language, or None when the message is readable."""
    facts = (message.metadata or {}).get("media") or {}
    if not facts.get("ask_to_write"):
        return None
    with override(str(facts.get("language") or "es")):
        return str(ASK_TO_WRITE)
