"""The `options` of an answer: 2-10 short choices the customer can pick instead of typing
(WhatsApp reply buttons or a list, web chat chips, a numbered list in an e-mail).

Pure functions, no database (the channels read the last answer's options with
ai_agents/conversations/option_reply.py). The model's output is never trusted: `options_clean`
keeps the options that have a title, cuts every field to its bound, gives each a unique id and
title, keeps at most 10 and returns none when fewer than 2 remain (a single "option" is no
choice). Each channel then applies its own, stricter limits
(ai_agents/channels/whatsapp/options.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext_lazy

MIN_OPTIONS = 2
MAX_OPTIONS = 10
ID_MAX = 200  # a WhatsApp list row's id (a reply button's may be 256)
TITLE_MAX = 72  # shown whole in the web chat and e-mail; WhatsApp cuts further
DESCRIPTION_MAX = 72  # a WhatsApp list row's description

OPTIONS_FIELD: dict[str, Any] = {
    "type": "array",
    "description": "opciones cortas para que el cliente elija (2 a 10), solo si ayudan",
    "maxItems": MAX_OPTIONS,
    "items": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "description": {"type": "string"},
        },
        "required": ["title"],
    },
}

OPTIONS_INSTRUCTION = gettext_lazy(
    "Si el cliente debe elegir entre pocas alternativas claras (2 a 10), añade options: "
    "una lista de {id, title, description?} con títulos de menos de 20 caracteres; el "
    "cliente podrá pulsar una en vez de escribir. No las uses en otros casos."
)

_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(r"^\s*(\d{1,2})\s*[.)]?\s*$")


def _line(value: Any, limit: int) -> str:
    """One line of at most `limit` characters (an ellipsis marks a cut)."""
    text = _SPACES.sub(" ", value).strip() if isinstance(value, str) else ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def options_clean(raw: Any) -> list[dict[str, str]]:
    """The model's `options` as [{"id", "title", "description"?}], bounded; [] unless 2-10
    usable choices remain. A bare string counts as a title; ids are made up when missing or
    repeated; a title repeated (case aside) is dropped."""
    if not isinstance(raw, list):
        return []
    out: list[dict[str, str]] = []
    titles: set[str] = set()
    ids: set[str] = set()
    for item in raw[: MAX_OPTIONS * 3]:
        data: Mapping[str, Any] = item if isinstance(item, dict) else {"title": item}
        title = _line(data.get("title"), TITLE_MAX)
        if not title or title.casefold() in titles:
            continue
        option_id = _line(data.get("id"), ID_MAX)
        if not option_id or option_id in ids:
            option_id = f"opt-{len(out) + 1}"
            while option_id in ids:
                option_id += "-"
        option = {"id": option_id, "title": title}
        description = _line(data.get("description"), DESCRIPTION_MAX)
        if description:
            option["description"] = description
        titles.add(title.casefold())
        ids.add(option_id)
        out.append(option)
        if len(out) == MAX_OPTIONS:
            break
    return out if len(out) >= MIN_OPTIONS else []


def options_of(metadata: Any) -> list[dict[str, str]]:
    """The options stored with a bot message (its metadata), cleaned again: what is shown or
    sent never relies on what was stored being well formed."""
    raw = metadata.get("options") if isinstance(metadata, dict) else None
    return options_clean(raw)


def option_chosen(text: str, options: Sequence[Mapping[str, str]]) -> dict[str, str] | None:
    """The option a typed reply names: its number in the list ("2", "2.", "2)") or its title
    (case and surrounding spaces aside). None otherwise."""
    found = _NUMBER.match(text or "")
    if found:
        index = int(found.group(1)) - 1
        return dict(options[index]) if 0 <= index < len(options) else None
    wanted = _SPACES.sub(" ", text or "").strip().casefold()
    for option in options:
        if wanted and option.get("title", "").casefold() == wanted:
            return dict(option)
    return None


def option_may_be_named(text: str) -> bool:
    """Whether `text` could name an option at all (a list number, or no longer than a title):
    the channels skip the look-up of the last answer's options for any other message."""
    if _NUMBER.match(text or ""):
        return True
    return 0 < len(_SPACES.sub(" ", text or "").strip()) <= TITLE_MAX


def option_pick(text: str, options: Sequence[Mapping[str, str]]) -> tuple[str, dict[str, str]]:
    """A customer's typed reply to the options of the bot's last answer, on every channel:
    (the text, {"option_id": id}) when it is only a number of the list or a title ("2", "2.",
    "Domingo"), as if they had tapped the button or chip; a bare number gets the option's title
    after it ("2 (Domingo)"), since the model never saw the options as numbers and the staff
    should read what was chosen. Otherwise (`text`, {})."""
    chosen = option_chosen(text, options) if option_may_be_named(text) else None
    if chosen is None:
        return text, {}
    named = (
        text
        if chosen["title"].casefold() in text.casefold()
        else f"{text.strip()} ({chosen['title']})"
    )
    return named, {"option_id": chosen["id"]}


def options_numbered(options: Sequence[Mapping[str, str]]) -> str:
    """ "1. Title — description" lines (the e-mail's list; the customer may answer "2")."""
    lines = []
    for number, option in enumerate(options, start=1):
        line = f"{number}. {option['title']}"
        if option.get("description"):
            line += f" — {option['description']}"
        lines.append(line)
    return "\n".join(lines)
