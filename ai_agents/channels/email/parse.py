"""Reading one raw inbound e-mail (RFC 5322): who wrote, which thread it answers, the new text
the customer typed (quoted history and signatures cut, HTML rendered as text), the attachments
(named, never opened) and whether a machine sent it (auto-replies, bounces) so two bots never
answer each other.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr
from typing import Any

from django.utils.translation import gettext as _
from lxml import etree

from erp.html_text import drop_keep_tail, html_to_text, parse_html, too_nested, truncate
from erp.storable import storable_text

TEXT_LIMIT = 8000
MAX_REFERENCES = 50

_MSGID = re.compile(r"<[^<>\s]+>")
_SUBJECT_PREFIX = re.compile(
    r"^\s*(?:(?:re|r|aw|sv|vs|antw|rv|res|ref|fw|fwd|rv|tr|enc)\s*(?:\[\d+\])?\s*:\s*)+", re.I
)
_REPLY_PREFIX = re.compile(r"^\s*(?:(?:re|aw|sv|rv|res)\s*(?:\[\d+\])?\s*:\s*)+", re.I)

# "On <date>, <someone> wrote:" and its translations; may be wrapped over two lines.
_ATTRIBUTION = re.compile(
    r"^(?:on\s.+\bwrote|el\s.+\bescribi[óo]|le\s.+\ba\s+[ée]crit|am\s.+\bschrieb|"
    r"il\s.+\bha\s+scritto|em\s.+\bescreveu|op\s.+\bschreef)\s*:\s*$",
    re.I,
)
_ATTRIBUTION_START = re.compile(r"^(?:on|el|le|am|il|em|op)\s", re.I)
_ORIGINAL_MESSAGE = re.compile(
    r"^\s*-{2,}\s*(?:original message|mensaje original|forwarded message|mensaje reenviado|"
    r"message d'origine|ursprüngliche nachricht)\s*-{2,}\s*$",
    re.I,
)
_HEADER_FROM = re.compile(r"^\s*\*?(?:from|de|von|da)\s*:\*?\s+\S", re.I)
_HEADER_OTHER = re.compile(
    r"^\s*\*?(?:sent|enviado(?:\s+el)?|date|fecha|to|para|subject|asunto|cc|an|gesendet|betreff)"
    r"\s*:\*?\s",
    re.I,
)
_UNDERSCORES = re.compile(r"^\s*_{8,}\s*$")
_SIGNATURE_LINES = re.compile(
    r"^\s*(?:enviado desde mi\s.+|sent from my\s.+|enviado desde (?:correo|outlook|yahoo).*|"
    r"get outlook for\s.+|obtener outlook para\s.+|sent from (?:outlook|mail for windows).*|"
    r"enviado con .+ desde .+)\s*$",
    re.I,
)


@dataclass
class Attachment:
    filename: str
    content_type: str
    size: int

    def note(self) -> str:
        return _("[Adjunto: %(name)s (%(type)s, %(size)s), no leído]") % {
            "name": self.filename,
            "type": self.content_type,
            "size": human_size(self.size),
        }


@dataclass
class ParsedEmail:
    message_id: str
    in_reply_to: list[str]
    references: list[str]
    subject: str
    sender: str  # the address replies go to (Reply-To, else From), lowercased domain
    sender_name: str
    from_address: str
    text: str  # what the model reads
    attachments: list[Attachment] = field(default_factory=list)
    machine: str = ""  # why a machine sent it ("" for a person): auto_reply, bounce, ...
    bounced_ids: list[str] = field(default_factory=list)  # a bounce: the ids it returns

    @property
    def known_ids(self) -> list[str]:
        """Ids this message says it follows, nearest first."""
        ids = list(self.in_reply_to)
        for ref in reversed(self.references):
            if ref not in ids:
                ids.append(ref)
        return ids

    @property
    def reply_references(self) -> list[str]:
        """The References a reply to this message carries (RFC 5322 3.6.4): its References
        (or In-Reply-To) then its own id, the root kept when the chain is long."""
        chain = list(self.references or self.in_reply_to)
        if self.message_id not in chain:
            chain.append(self.message_id)
        return references_bound(chain)


class InvalidEmail(ValueError):
    pass


def email_parse(raw: bytes) -> ParsedEmail:
    if not raw or not raw.strip():
        raise InvalidEmail(_("El cuerpo está vacío: se espera un mensaje RFC 5322 completo."))
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
        body, attachments = _body_and_attachments(message)
    except RecursionError:
        # MIME parts nested ~1,000 deep (a mail bomb, never a person's message): keep the
        # headers, leave the body unread, and still store it instead of failing with a 500
        # that the provider would retry forever.
        message = BytesParser(policy=policy.default).parsebytes(_headers_only(raw))
        body, attachments = (
            _("(El contenido del mensaje no se ha leído: demasiadas partes anidadas.)"),
            [],
        )
    from_name, from_address = _address(message, "From")
    if not from_address:
        raise InvalidEmail(_("El mensaje no tiene un remitente (From) válido."))
    reply_name, reply_address = _address(message, "Reply-To")
    message_id = _ids(_header(message, "Message-ID"))
    subject = " ".join(_header(message, "Subject").split())
    text = reply_text_extract(body)
    machine = machine_reason(message, from_address)
    notes = [a.note() for a in attachments]
    if notes:
        text = (text + "\n\n" + "\n".join(notes)).strip()
    return ParsedEmail(
        message_id=message_id[0] if message_id else synthetic_message_id(raw),
        in_reply_to=_ids(_header(message, "In-Reply-To"))[:1],
        references=references_bound(_ids(_header(message, "References"))),
        subject=subject[:500],
        sender=reply_address or from_address,
        sender_name=(reply_name if reply_address else from_name)[:200],
        from_address=from_address,
        text=truncate(text, TEXT_LIMIT),
        attachments=attachments,
        machine=machine,
        bounced_ids=bounced_ids(raw, exclude=message_id) if machine == "bounce" else [],
    )


def _headers_only(raw: bytes) -> bytes:
    """The message's header block as a plain text message with an empty body."""
    ends = [i for i in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if i >= 0]
    head = raw[: min(ends)] if ends else raw
    kept = [
        line
        for line in head.splitlines()
        if not line.lower().startswith((b"content-type:", b"content-transfer-encoding:"))
        and not (line[:1] in (b" ", b"\t") and b"boundary" in line.lower())
    ]
    return b"\r\n".join([*kept, b"Content-Type: text/plain; charset=utf-8", b"", b""])


def bounced_ids(raw: bytes, *, exclude: list[str]) -> list[str]:
    """Message ids quoted in a delivery report (the returned message's headers): where one of
    ours is named, its delivery failed."""
    found = _MSGID_BYTES.findall(raw[: 2 * 1024 * 1024])
    ids = [m.decode("ascii", "replace") for m in found]
    return [i for i in dict.fromkeys(ids) if i not in exclude and len(i) <= 250][:50]


_MSGID_BYTES = re.compile(rb"<[!-;=?-~]+@[!-;=?-~]+>")


def synthetic_message_id(raw: bytes) -> str:
    """A stable id for a message without Message-ID, so a redelivery is still a duplicate."""
    return f"<{hashlib.sha256(raw).hexdigest()[:40]}@no-message-id.invalid>"


def references_bound(ids: list[str]) -> list[str]:
    unique = list(dict.fromkeys(ids))
    if len(unique) <= MAX_REFERENCES:
        return unique
    return [unique[0], *unique[-(MAX_REFERENCES - 1) :]]


def subject_normalise(subject: str) -> str:
    """The subject without Re:/Fwd:/RV: prefixes (any language, any number of them)."""
    return _SUBJECT_PREFIX.sub("", subject or "").strip()


def reply_subject(subject: str) -> str:
    """ "Re: <subject>", never "Re: Re: <subject>"."""
    base = _REPLY_PREFIX.sub("", subject or "").strip()
    return f"Re: {base}" if base else "Re:"


def machine_reason(message: EmailMessage, from_address: str) -> str:
    """Why this message was sent by a machine, or "" (RFC 3834 and the de facto headers)."""
    local = from_address.split("@", 1)[0].lower()
    if local in {"mailer-daemon", "postmaster"}:
        return "bounce"
    if message.get_content_type() in {"multipart/report", "message/delivery-status"}:
        return "bounce"
    return_path = _header(message, "Return-Path")
    if return_path and not return_path.strip(" <>"):
        return "bounce"  # "Return-Path: <>": the null sender of delivery reports
    auto_submitted = _header(message, "Auto-Submitted").strip().lower()
    if auto_submitted and auto_submitted != "no":
        return "auto_submitted"
    if _header(message, "Precedence").strip().lower() in {"bulk", "junk", "list", "auto_reply"}:
        return "precedence"
    if _header(message, "X-Autoreply") or _header(message, "X-Autorespond"):
        return "auto_reply"
    return ""


# --- Text ----------------------------------------------------------------------------------
def reply_text_extract(text: str) -> str:
    """The new text of a reply: quoted history ("On ... wrote:", "> " lines, Outlook's
    "-----Original Message-----" and "De: / Enviado: / Para:" blocks) and the signature
    ("-- ", "Enviado desde mi iPhone") cut. When nothing would be left, the whole text."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[str] = []
    for index, line in enumerate(lines):
        if _is_cut(lines, index):
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line.rstrip())
    result = _BLANKS.sub("\n\n", "\n".join(kept)).strip()
    return result or _BLANKS.sub("\n\n", text).strip()


_BLANKS = re.compile(r"\n\s*\n(?:\s*\n)+")


def _is_cut(lines: list[str], index: int) -> bool:
    line = lines[index]
    stripped = line.strip()
    if line in ("-- ", "--") or _SIGNATURE_LINES.match(stripped):
        return True
    if _ORIGINAL_MESSAGE.match(stripped) or _UNDERSCORES.match(stripped):
        return True
    if _ATTRIBUTION.match(stripped):
        return True
    if _ATTRIBUTION_START.match(stripped) and index + 1 < len(lines):
        joined = f"{stripped} {lines[index + 1].strip()}"
        if _ATTRIBUTION.match(joined):
            return True
    if _HEADER_FROM.match(stripped):
        following = [lines[i].strip() for i in range(index + 1, min(index + 5, len(lines)))]
        return sum(1 for f in following if _HEADER_OTHER.match(f)) >= 2
    return False


def _body_and_attachments(message: EmailMessage) -> tuple[str, list[Attachment]]:
    body_part = message.get_body(preferencelist=("plain", "html"))
    text = ""
    if body_part is not None:
        content = _content(body_part)
        if body_part.get_content_type() == "text/html":
            text = html_to_text(_html_without_quotes(content), limit=TEXT_LIMIT * 2)
        else:
            text = content
    attachments: list[Attachment] = []
    for part in message.walk():
        if part is body_part or part.is_multipart():
            continue
        filename = part.get_filename()
        disposition = part.get_content_disposition()
        if disposition != "attachment" and not filename:
            continue  # the other alternative of the body, or an inline image without a name
        attachments.append(
            Attachment(
                filename=storable_text(" ".join(str(filename or _("sin nombre")).split())[:200]),
                content_type=part.get_content_type(),
                size=_payload_size(part),
            )
        )
    return text, attachments


def _content(part: Any) -> str:
    try:
        value = part.get_content()
    except (LookupError, ValueError, AssertionError):
        payload = part.get_payload(decode=True) or b""
        value = payload.decode("utf-8", errors="replace")
    # `=00` in quoted-printable or a raw NUL decode to U+0000, which PostgreSQL cannot store.
    return storable_text(value) if isinstance(value, str) else ""


def _payload_size(part: Any) -> int:
    """The decoded size, computed without keeping or interpreting the content."""
    payload = part.get_payload(decode=True)
    return len(payload) if isinstance(payload, bytes) else 0


_QUOTE_XPATH = (
    "//blockquote | //*[@id='divRplyFwdMsg'] | //div[contains(concat(' ', normalize-space(@class), "
    "' '), ' gmail_quote ') or contains(concat(' ', normalize-space(@class), ' '), "
    "' gmail_signature ') or contains(concat(' ', normalize-space(@class), ' '), "
    "' moz-cite-prefix ') or contains(concat(' ', normalize-space(@class), ' '), ' yahoo_quoted ')]"
)


def _html_without_quotes(html: str) -> str:
    """HTML mail quotes its history in <blockquote> (Apple, Thunderbird), Gmail's
    div.gmail_quote and Outlook's #divRplyFwdMsg / #appendonsend; they go before rendering.
    HTML nested too deep to parse cheaply stays whole (html_to_text strips its tags)."""
    if too_nested(html):
        return html
    try:
        root = parse_html(html)
        if root is None:
            return html
        for node in root.xpath(_QUOTE_XPATH):
            drop_keep_tail(node)
        for appendonsend in root.xpath("//*[@id='appendonsend']")[:1]:
            appendonsend.tail = None
            for node in list(appendonsend.itersiblings()):
                node.getparent().remove(node)
        return etree.tostring(root, encoding="unicode", method="html")
    except Exception:  # never fail on hostile HTML; html_to_text copes with the original
        return html


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


# --- Headers -------------------------------------------------------------------------------
def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a malformed header: treat as absent rather than 500
        return ""
    # Encoded words may decode to NUL; undecodable 8-bit bytes stay as lone surrogates.
    return storable_text(str(value)) if value is not None else ""


def _address(message: EmailMessage, name: str) -> tuple[str, str]:
    raw = _header(message, name)
    if not raw:
        return "", ""
    pairs = getaddresses([raw]) or [parseaddr(raw)]
    for display, address in pairs:
        address = address.strip()
        if "@" in address and " " not in address:
            local, _at, domain = address.rpartition("@")
            return display.strip(), f"{local}@{domain.lower()}"
    return "", ""


def _ids(value: str) -> list[str]:
    return [m for m in _MSGID.findall(value or "") if len(m) <= 250]
