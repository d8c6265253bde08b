"""How a web chat binding looks on the customer's site: colour, title, greeting, launcher text,
position and avatar (`ChannelBinding.appearance`, a JSON object; missing keys are defaults).

The owner's texts reach the widget as JSON and the widget sets them with `textContent`, so
they are never parsed as HTML. The colour is a validated hex; the text on it is black or white,
whichever contrasts more (always at least 4.5:1, WCAG AA). The avatar is an https URL (no
upload: nothing to store or serve, and the page's CSP `img-src` names its host).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

DEFAULT_COLOR = "#1f5fbf"
POSITIONS = ("bottom-right", "bottom-left")
TEXT_MAX = {"title": 60, "greeting": 300, "launcher_text": 40}
AVATAR_URL_MAX = 500
KEYS = ("color", "title", "greeting", "launcher_text", "position", "avatar_url")

_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_LIGHT, _DARK = "#ffffff", "#000000"


def appearance_clean(value: Any) -> dict[str, str]:
    """The stored form of an appearance object: known keys only, empty values dropped (the
    default applies). Raises ValidationError on the `appearance` field naming what is wrong."""
    if value in (None, "", {}):
        return {}
    if not isinstance(value, dict):
        raise _invalid(_('Debe ser un objeto, p. ej. {"color": "#1f5fbf"}.'), "")
    unknown = sorted(str(k) for k in value if k not in KEYS)
    if unknown:
        raise _invalid(_("Clave desconocida: %(key)s.") % {"key": unknown[0]}, "")
    cleaned: dict[str, str] = {}
    for key in KEYS:
        raw = value.get(key)
        if raw in (None, ""):
            continue
        if not isinstance(raw, str):
            raise _invalid(_("«%(key)s» debe ser un texto.") % {"key": key}, key)
        text = CLEANERS[key](raw)
        if text:
            cleaned[key] = text
    return cleaned


def color_clean(raw: str) -> str:
    text = raw.strip()
    if not _HEX.match(text):
        raise _invalid(_("El color debe ser hexadecimal, p. ej. #1f5fbf."), "color")
    if len(text) == 4:
        text = "#" + "".join(c * 2 for c in text[1:])
    return text.lower()


def _text_cleaner(key: str, *, multiline: bool) -> Any:
    def clean(raw: str) -> str:
        kept = "".join(
            c
            for c in raw
            if (multiline and c == "\n") or not unicodedata.category(c).startswith("C")
        )
        if multiline:
            text = "\n".join(" ".join(line.split()) for line in kept.splitlines()).strip()
        else:
            text = " ".join(kept.split())
        if len(text) > TEXT_MAX[key]:
            message = _("«%(key)s» admite como mucho %(n)s caracteres.")
            raise _invalid(message % {"key": key, "n": TEXT_MAX[key]}, key)
        return text

    return clean


def position_clean(raw: str) -> str:
    if raw not in POSITIONS:
        raise _invalid(_("La posición debe ser bottom-right o bottom-left."), "position")
    return raw


def avatar_url_clean(raw: str) -> str:
    text = raw.strip()
    error = _invalid(
        _("El avatar debe ser una URL https:// de una imagen, sin usuario ni clave."), "avatar_url"
    )
    if len(text) > AVATAR_URL_MAX or any(c.isspace() or c in "\"'<>\\" for c in text):
        raise error
    try:
        parts = urlsplit(text)
    except ValueError:
        raise error from None
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        raise error
    return text


CLEANERS = {
    "color": color_clean,
    "title": _text_cleaner("title", multiline=False),
    "greeting": _text_cleaner("greeting", multiline=True),
    "launcher_text": _text_cleaner("launcher_text", multiline=False),
    "position": position_clean,
    "avatar_url": avatar_url_clean,
}


def _invalid(message: str, key: str) -> ValidationError:
    """On the `appearance` field (the API's), coded with the key (the admin's field)."""
    return ValidationError({"appearance": [ValidationError(message, code=key or "invalid")]})


# --- colour contrast ------------------------------------------------------------------------


def _luminance(hex_color: str) -> float:
    """WCAG 2 relative luminance of `#rrggbb`."""
    channels = []
    for i in (1, 3, 5):
        c = int(hex_color[i : i + 2], 16) / 255
        channels.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    red, green, blue = channels
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast_ratio(first: str, second: str) -> float:
    high, low = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_color_for(background: str) -> str:
    """White or black, whichever reads better on `background`."""
    light = contrast_ratio(background, _LIGHT)
    return _LIGHT if light >= contrast_ratio(background, _DARK) else _DARK


# --- what the widget gets -----------------------------------------------------------------


def appearance_public(stored: Any) -> dict[str, str]:
    """The look the widget applies (texts travel with the other texts: `widget_texts`)."""
    data = stored if isinstance(stored, dict) else {}
    color = data.get("color") or DEFAULT_COLOR
    return {
        "color": color,
        "text_color": text_color_for(color),
        "position": data.get("position") or POSITIONS[0],
        "avatar_url": data.get("avatar_url") or "",
    }
