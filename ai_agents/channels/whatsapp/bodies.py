"""The Graph API message bodies the WhatsApp adapter sends: text (split at Meta's 4096
characters), interactive, template, and the read mark with its typing indicator."""

from __future__ import annotations

import re
from typing import Any

TEXT_LIMIT = 4096


def text_split(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """Parts of at most `limit` characters, cut at the last paragraph break, else sentence
    end, else space before the limit (a word longer than the limit is cut hard)."""
    text = text.strip()
    parts: list[str] = []
    while len(text) > limit:
        window = text[: limit + 1]
        cut = _last_break(window, limit)
        parts.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        parts.append(text)
    return parts


def _last_break(window: str, limit: int) -> int:
    for pattern in (r"\n\s*\n", r"[.!?…](?=\s)", r"\s"):
        ends = [m.end() for m in re.finditer(pattern, window) if 0 < m.end() <= limit]
        if ends and ends[-1] > limit // 4:  # a break too early would make tiny parts
            return ends[-1]
    return limit


def text_body(to: str, text: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "text",
        "text": {"preview_url": False, "body": text},
    }


def interactive_body(to: str, text: str, spec: dict[str, Any]) -> dict[str, Any]:
    """An interactive message (e.g. the rating list of a close notice): `spec` without its
    body, which is the message's text (at most 1024 characters)."""
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "interactive",
        "interactive": {**spec, "body": {"text": text[:1024]}},
    }


def template_body(to: str, template: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": str(template["name"]),
        "language": {"code": str(template.get("language") or "es")},
    }
    if template.get("components"):
        body["components"] = template["components"]
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "template",
        "template": body,
    }


def mark_read_body(message_id: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": message_id,
        "typing_indicator": {"type": "text"},
    }
