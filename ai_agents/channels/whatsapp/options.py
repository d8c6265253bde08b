"""A bot answer with `options` (ai_agents/rules/options.py) as WhatsApp interactive messages,
inside the Cloud API's limits so a send never meets error 131009 (parameter invalid):

- 2-3 options whose titles fit 20 characters: reply buttons;
- otherwise (up to 10): a list message, row titles cut to 24 characters (the whole title then
  goes to the row's description if it has none), descriptions to 72, ids to 200, titles kept
  unique; its button and section titles are short fixed words in the customer's language.

The body of an interactive message holds at most 1024 characters (a text, 4096). A longer
answer goes out as text first and its last part (at most 1024 characters, cut at a paragraph,
sentence or word) becomes the body of the interactive message: the choices come after the
words that ask for them, nothing is invented or left out, and the customer reads the answer
in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import override

from ai_agents.rules.options import options_of
from erp.llm.language import customer_language

BODY_MAX = 1024
BUTTONS_MAX = 3
BUTTON_TITLE_MAX = 20
BUTTON_ID_MAX = 256
ROWS_MAX = 10
ROW_TITLE_MAX = 24
ROW_DESCRIPTION_MAX = 72
ROW_ID_MAX = 200
LIST_BUTTON_MAX = 20
SECTION_TITLE_MAX = 24


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _unique_titles(titles: list[str], limit: int) -> list[str]:
    """The titles cut to `limit`, a number replacing the end of one that became a repeat."""
    out: list[str] = []
    for number, title in enumerate(titles, start=1):
        shown = _cut(title, limit)
        if shown.casefold() in {t.casefold() for t in out}:
            tail = f" ({number})"
            shown = _cut(title, limit - len(tail)) + tail
        out.append(shown)
    return out


def buttons_spec(options: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    buttons = [
        {"type": "reply", "reply": {"id": o["id"][:BUTTON_ID_MAX], "title": o["title"]}}
        for o in options
    ]
    return {"type": "button", "action": {"buttons": buttons}}


def list_spec(options: Sequence[Mapping[str, str]], *, language: str) -> dict[str, Any]:
    titles = _unique_titles([o["title"] for o in options[:ROWS_MAX]], ROW_TITLE_MAX)
    rows = []
    for option, title in zip(options, titles, strict=False):
        row = {"id": option["id"][:ROW_ID_MAX], "title": title}
        description = option.get("description") or (title != option["title"] and option["title"])
        if description:
            row["description"] = _cut(str(description), ROW_DESCRIPTION_MAX)
        rows.append(row)
    with override(language):
        button, section = _("Ver opciones"), _("Opciones")
    return {
        "type": "list",
        "action": {
            "button": _cut(button, LIST_BUTTON_MAX),
            "sections": [{"title": _cut(section, SECTION_TITLE_MAX), "rows": rows}],
        },
    }


def interactive_spec(options: Sequence[Mapping[str, str]], *, language: str) -> dict[str, Any]:
    """Buttons when they can show every option whole, else a list."""
    fits = all(len(o["title"]) <= BUTTON_TITLE_MAX for o in options)
    if len(options) <= BUTTONS_MAX and fits:
        return buttons_spec(options)
    return list_spec(options, language=language)


def body_split(text: str, limit: int = BODY_MAX) -> tuple[str, str]:
    """(what goes first as text, the last part of at most `limit` characters), cut at the
    first paragraph break, else sentence end, else space in the last `limit` characters."""
    text = text.strip()
    if len(text) <= limit:
        return "", text
    start = len(text) - limit
    window = text[start:]
    for pattern in (r"\n\s*\n", r"[.!?…]\s", r"\s"):
        found = re.search(pattern, window)
        if found and found.end() < len(window):
            cut = start + found.end()
            return text[:cut].rstrip(), text[cut:].strip()
    return text[:start].rstrip(), window.strip()


def options_bodies(
    to: str, message: Any, split: Callable[[str], list[str]]
) -> list[dict[str, Any]]:
    """The request bodies of a bot answer with options (text parts, then the interactive
    message); [] when it has none. `split`: the adapter's text splitting (4096 a part)."""
    options = options_of(message.metadata)
    if not options:
        return []
    lead, body = body_split(message.content)
    language = customer_language([message.content])
    interactive = interactive_spec(options, language=language)
    bodies = [_text(to, part) for part in split(lead)] if lead else []
    bodies.append(
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to,
            "type": "interactive",
            "interactive": {**interactive, "body": {"text": body or "…"}},
        }
    )
    return bodies


def _text(to: str, text: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "text",
        "text": {"preview_url": False, "body": text},
    }
