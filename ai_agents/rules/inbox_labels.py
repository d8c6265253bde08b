"""What the inbox shows instead of codes: channel names, a contact's display name and a
WhatsApp template's language."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils.translation import get_language_info, gettext, gettext_lazy

CHANNEL_LABELS = {
    "whatsapp": gettext_lazy("WhatsApp"),
    "webchat": gettext_lazy("Chat web"),
    "email": gettext_lazy("Correo electrónico"),
    "api": gettext_lazy("API"),
}
CHANNELS = frozenset(CHANNEL_LABELS)


def channel_label(code: str) -> str:
    """The channel's name in the active language (an unknown code as is)."""
    return str(CHANNEL_LABELS.get(code, code))


def visitor_number(key: Any) -> int:
    """A short number that stays the same for one contact (or conversation, when there is no
    contact): "Visitante web 4821" tells two anonymous visitors apart without a counter."""
    try:
        value = uuid.UUID(str(key)).int
    except ValueError:
        value = sum(ord(c) for c in str(key))
    return value % 9000 + 1000


def contact_display_name(contact: Any, *, fallback_key: Any) -> str:
    """The contact's name, else phone, else e-mail, else "Visitante web N"."""
    if contact is not None:
        for value in (contact.name, contact.phone, contact.email):
            if value and str(value).strip():
                return str(value).strip()
        fallback_key = contact.pk
    return gettext("Visitante web %(n)s") % {"n": visitor_number(fallback_key)}


def template_language_label(code: str) -> str:
    """Meta's language code of a template in words, with the code kept after it ("English,
    en_US"): the code alone reads as jargon, the name alone hides en_US from en_GB. The name is
    the language's own, as in the language switcher; an unknown code stays as is."""
    try:
        name = get_language_info(code.replace("_", "-").lower())["name_local"]
    except KeyError:
        return code
    return f"{name[:1].upper()}{name[1:]}, {code}"
