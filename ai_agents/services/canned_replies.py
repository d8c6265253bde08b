"""Canned replies: saved answers per tenant with variables, filled in for one conversation.

Variables: {{contact.name}}, {{contact.phone}}, {{contact.email}}, {{agent.name}} (the staff
member who inserts it). A text naming any other variable is refused when it is saved (so the
customer never receives a raw "{{...}}"); rendering is plain substitution of those four values,
nothing else in the text is interpreted. A value the contact lacks renders as "".
"""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from ai_agents.models import CannedReply, Conversation
from ai_agents.models.inbox import CANNED_TEXT_MAX_CHARS, SHORTCUT_MAX_CHARS
from ai_agents.services.handoff import user_display_name
from erp.storable import unstorable, unstorable_message

VARIABLES = ("contact.name", "contact.phone", "contact.email", "agent.name")
_VARIABLE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_SHORTCUT = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
TITLE_MAX_CHARS = 200


class CannedReplyInvalid(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def unknown_variables(text: str) -> list[str]:
    return sorted({name for name in _VARIABLE.findall(text) if name not in VARIABLES})


def canned_reply_clean(shortcut: Any, title: Any, text: Any) -> tuple[str, str, str]:
    """The values as stored, or CannedReplyInvalid naming the field (the API and the admin)."""
    shortcut = shortcut.strip().lstrip("/").lower() if isinstance(shortcut, str) else ""
    if not shortcut or len(shortcut) > SHORTCUT_MAX_CHARS or not _SHORTCUT.match(shortcut):
        raise CannedReplyInvalid(
            "shortcut",
            _("El atajo admite de 1 a %(n)s letras minúsculas, cifras, - o _.")
            % {"n": SHORTCUT_MAX_CHARS},
        )
    if not isinstance(title, str) or not title.strip() or len(title) > TITLE_MAX_CHARS:
        raise CannedReplyInvalid(
            "title", _("Escriba un título de hasta %(n)s caracteres.") % {"n": TITLE_MAX_CHARS}
        )
    if not isinstance(text, str) or not text.strip() or len(text) > CANNED_TEXT_MAX_CHARS:
        raise CannedReplyInvalid(
            "text",
            _("Escriba el texto, de hasta %(n)s caracteres.") % {"n": CANNED_TEXT_MAX_CHARS},
        )
    for field, value in (("title", title), ("text", text)):
        if unstorable(value):
            raise CannedReplyInvalid(field, unstorable_message())
    unknown = unknown_variables(text)
    if unknown:
        raise CannedReplyInvalid(
            "text",
            _("Variables desconocidas: %(names)s. Disponibles: %(known)s.")
            % {
                "names": ", ".join("{{%s}}" % n for n in unknown),  # noqa: UP031
                "known": ", ".join("{{%s}}" % n for n in VARIABLES),  # noqa: UP031
            },
        )
    return shortcut, title.strip(), text.strip()


def _save(reply: CannedReply) -> CannedReply:
    try:
        with transaction.atomic():
            reply.save()
    except IntegrityError:
        raise CannedReplyInvalid(
            "shortcut", _("Ya hay una respuesta con el atajo /%(s)s.") % {"s": reply.shortcut}
        ) from None
    return reply


def canned_reply_create(*, tenant_id: int, shortcut: Any, title: Any, text: Any) -> CannedReply:
    shortcut, title, text = canned_reply_clean(shortcut, title, text)
    return _save(CannedReply(tenant_id=tenant_id, shortcut=shortcut, title=title, text=text))


def canned_reply_update(*, reply: CannedReply, changes: dict[str, Any]) -> CannedReply:
    """Changes any of shortcut, title, text (the others stay)."""
    shortcut, title, text = canned_reply_clean(
        changes.get("shortcut", reply.shortcut),
        changes.get("title", reply.title),
        changes.get("text", reply.text),
    )
    reply.shortcut, reply.title, reply.text = shortcut, title, text
    return _save(reply)


def canned_reply_delete(*, reply: CannedReply) -> None:
    reply.delete()


def canned_reply_render(*, reply: CannedReply, conversation: Conversation, agent: Any) -> str:
    """The reply's text with the variables filled in for `conversation` and `agent`."""
    contact = conversation.contact if conversation.contact_id is not None else None
    values = {
        "contact.name": contact.name if contact is not None else "",
        "contact.phone": contact.phone if contact is not None else "",
        "contact.email": contact.email if contact is not None else "",
        "agent.name": user_display_name(agent) if agent is not None else "",
    }
    return _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), reply.text)
