"""Reading WhatsApp Cloud API webhook bodies: pure functions, no database.

Meta batches (every entry, change, message, status and error must be walked), adds new message
types without notice, and omits optional fields freely; so every field is read defensively and
nothing here raises on a shape it does not know. Logic branches on codes, never on titles.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

SIGNATURE_PREFIX = "sha256="

# Types stored but never answered: a reaction is not a question, a system notice (number
# changed) is not from the customer's keyboard.
SILENT_TYPES = frozenset({"reaction", "system"})
MEDIA_TYPES = frozenset({"image", "audio", "document", "video", "sticker"})


def signature_valid(raw_body: bytes, header: str | None, secret: str) -> bool:
    """`X-Hub-Signature-256` over the raw bytes Meta sent (escaped unicode, `\\/`), compared in
    constant time. Meta sends lowercase hex; anything else (no prefix, uppercase, SHA-1,
    non-ASCII: `compare_digest` only compares ASCII strings) fails."""
    if not header or not header.startswith(SIGNATURE_PREFIX) or not header.isascii():
        return False
    expected = hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len(SIGNATURE_PREFIX) :])


@dataclass(frozen=True)
class WaMessage:
    """One inbound message, ready for `inbound_accept`."""

    phone_number_id: str
    message_id: str
    wa_id: str
    name: str
    type: str
    text: str
    answer: bool
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WaStatus:
    phone_number_id: str
    message_id: str  # the wamid we got when sending
    status: str  # sent | delivered | read | failed | played
    timestamp: str
    error_code: str = ""
    error_message: str = ""


@dataclass(frozen=True)
class WaError:
    phone_number_id: str
    code: str
    title: str
    details: str


@dataclass
class WaBatch:
    messages: list[WaMessage] = field(default_factory=list)
    statuses: list[WaStatus] = field(default_factory=list)
    errors: list[WaError] = field(default_factory=list)
    skipped: int = 0  # items without the fields we need (logged by the caller)


def batch_parse(payload: Any) -> WaBatch:
    """Every message, status and error of every change of every entry."""
    batch = WaBatch()
    for value in _values(payload):
        metadata = _dict(value.get("metadata"))
        number = str(metadata.get("phone_number_id") or "")
        names = {
            str(c.get("wa_id") or ""): str(_dict(c.get("profile")).get("name") or "")
            for c in _dicts(value.get("contacts"))
        }
        for raw in _dicts(value.get("messages")):
            message = message_parse(raw, phone_number_id=number, names=names)
            if message is None:
                batch.skipped += 1
            else:
                batch.messages.append(message)
        for raw in _dicts(value.get("statuses")):
            status = status_parse(raw, phone_number_id=number)
            if status is None:
                batch.skipped += 1
            else:
                batch.statuses.append(status)
        for raw in _dicts(value.get("errors")):
            code, title, details = _error_fields(raw)
            batch.errors.append(WaError(number, code, title, details))
    return batch


def _values(payload: Any) -> Iterator[Mapping[str, Any]]:
    if not isinstance(payload, dict) or payload.get("object") != "whatsapp_business_account":
        return
    for entry in _dicts(payload.get("entry")):
        for change in _dicts(entry.get("changes")):
            if change.get("field", "messages") != "messages":
                continue  # account/template updates: not ours
            value = change.get("value")
            if isinstance(value, dict):
                yield value


def message_parse(
    raw: Mapping[str, Any], *, phone_number_id: str, names: Mapping[str, str]
) -> WaMessage | None:
    message_id = str(raw.get("id") or "")
    sender = str(raw.get("from") or "").lstrip("+")
    if not message_id or not sender or not phone_number_id:
        return None
    kind = str(raw.get("type") or "unknown")
    body = raw.get(kind)
    text, details = message_text(kind, body if isinstance(body, dict | list) else {})
    metadata: dict[str, Any] = {
        "type": kind,
        "wa_id": sender,
        "phone_number_id": phone_number_id,
        "timestamp": str(raw.get("timestamp") or ""),
        **details,
    }
    context = raw.get("context")
    if isinstance(context, dict):
        metadata["context"] = context
    errors = [
        dict(zip(("code", "title", "details"), _error_fields(e), strict=True))
        for e in _dicts(raw.get("errors"))
    ]
    if errors:
        metadata["errors"] = errors
    return WaMessage(
        phone_number_id=phone_number_id,
        message_id=message_id,
        wa_id=sender,
        name=_sender_name(sender, names),
        type=kind,
        text=text,
        answer=kind not in SILENT_TYPES,
        metadata=metadata,
    )


def _sender_name(sender: str, names: Mapping[str, str]) -> str:
    """The profile name of `contacts[]` for this sender (wa_id and `from` may differ in form:
    with a single contact in the change, it is the sender's)."""
    if names.get(sender):
        return names[sender]
    return next(iter(names.values())) if len(names) == 1 else ""


def message_text(kind: str, raw_body: Any) -> tuple[str, dict[str, Any]]:
    """What the model reads for this message (a short Spanish description for what it cannot
    see, so it can say what it can do), and the facts kept in the message's metadata."""
    if kind == "contacts":
        return _contacts_text(raw_body), {"contacts": raw_body}
    body = _dict(raw_body)
    if kind == "text":
        return str(body.get("body") or ""), {}
    if kind == "interactive":
        reply = _dict(body.get(str(body.get("type") or "")))
        title = str(reply.get("title") or "")
        facts: dict[str, Any] = {
            "interactive": {"type": body.get("type"), "id": reply.get("id"), "title": title}
        }
        if isinstance(reply.get("id"), str) and reply["id"]:
            facts["option_id"] = reply["id"][:256]  # the button or list row chosen
        return title or _("[El cliente pulsó una opción]"), facts
    if kind == "button":  # quick-reply button of a template
        label = str(body.get("text") or "")
        return label, {"button": {"text": label, "payload": body.get("payload")}}
    if kind in MEDIA_TYPES:
        return _media_text(kind, body), {"media": _media_facts(body)}
    if kind == "location":
        return _location_text(body), {"location": dict(body)}
    if kind == "reaction":
        emoji = str(body.get("emoji") or "")
        facts = {"reaction": {"message_id": body.get("message_id"), "emoji": emoji}}
        text = _("[Reacción: %(emoji)s]") % {"emoji": emoji} if emoji else _("[Reacción quitada]")
        return text, facts
    if kind == "system":
        return str(body.get("body") or _("[Aviso del sistema de WhatsApp]")), {"system": body}
    shown = str(body.get("type") or kind) if kind == "unsupported" else kind
    text = _(
        "[El cliente envió un mensaje de un tipo que no podemos leer (%(type)s). "
        "Pídele que lo escriba como texto.]"
    ) % {"type": shown}
    return text, {"unsupported": {"type": shown}}


def _media_facts(body: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("id", "mime_type", "caption", "filename", "voice", "animated", "sha256")
    return {k: body[k] for k in keys if k in body}


def _media_text(kind: str, body: Mapping[str, Any]) -> str:
    caption = str(body.get("caption") or "").strip()
    if kind == "audio":
        if body.get("voice"):
            return _("[El cliente envió una nota de voz que no podemos escuchar]")
        return _("[El cliente envió un audio que no podemos escuchar]")
    if kind == "sticker":
        return _("[El cliente envió un sticker]")
    what = {
        "image": _("una imagen"),
        "video": _("un vídeo"),
        "document": _("un documento"),
    }[kind]
    filename = str(body.get("filename") or "").strip()
    if filename:
        what = f"{what} «{filename}»"
    if caption:
        return _("[El cliente envió %(what)s: %(caption)s]") % {"what": what, "caption": caption}
    return _("[El cliente envió %(what)s sin texto]") % {"what": what}


def _location_text(body: Mapping[str, Any]) -> str:
    parts = [str(body[k]) for k in ("name", "address") if body.get(k)]
    where = ", ".join(parts)
    coords = f"{body.get('latitude')}, {body.get('longitude')}"
    place = f"{where} ({coords})" if where else coords
    return _("[El cliente compartió una ubicación: %(place)s]") % {"place": place}


def _contacts_text(body: Any) -> str:
    cards = body if isinstance(body, list) else []
    shown = []
    for card in _dicts(cards):
        name = str(_dict(card.get("name")).get("formatted_name") or "")
        phones = [str(p.get("phone") or "") for p in _dicts(card.get("phones"))]
        shown.append(" ".join(x for x in (name, ", ".join(p for p in phones if p)) if x))
    return _("[El cliente compartió un contacto: %(who)s]") % {
        "who": "; ".join(s for s in shown if s) or "?"
    }


def status_parse(raw: Mapping[str, Any], *, phone_number_id: str) -> WaStatus | None:
    message_id, status = str(raw.get("id") or ""), str(raw.get("status") or "")
    if not message_id or not status:
        return None
    code = title = ""
    errors = _dicts(raw.get("errors"))
    if errors:
        code, title, details = _error_fields(errors[0])
        title = details or title
    return WaStatus(
        phone_number_id=phone_number_id,
        message_id=message_id,
        status=status,
        timestamp=str(raw.get("timestamp") or ""),
        error_code=code,
        error_message=title,
    )


def _error_fields(raw: Mapping[str, Any]) -> tuple[str, str, str]:
    details = str(_dict(raw.get("error_data")).get("details") or "")
    return str(raw.get("code") or ""), str(raw.get("title") or raw.get("message") or ""), details


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
