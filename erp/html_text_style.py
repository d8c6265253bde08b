"""What an HTML element's attributes and inline styles say about its visibility.

Shared by every reader of untrusted HTML (`erp.html_text`): an element is hidden by the
`hidden` attribute, `aria-hidden="true"`, inline styles with display:none, visibility:hidden,
opacity:0, font-size 0/1px, max-height:0 or width:0 and height:0, text whose colour equals the
background it sits on (inline `color` against the nearest `background(-color)` / `bgcolor`,
white when none), and classes hidden by simple top-level `<style>` rules (`.x{display:none}`).
Text a reader does not see must not reach a prompt or a knowledge base.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_STYLE_DECL = re.compile(r"([a-zA-Z-]+)\s*:\s*([^;]*)")
_TOP_LEVEL_RULE = re.compile(r"([^{}@]+)\{([^{}]*)\}")
_SIMPLE_CLASS = re.compile(r"^\.([A-Za-z0-9_-]+)$")
_LENGTH_ZERO = re.compile(r"^-?0*\.?0*(px|pt|em|rem|%)?$")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_RGB = re.compile(r"rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)\s*(?:[,/]\s*([\d.]+%?))?\s*\)")
_HEX = frozenset("0123456789abcdef")

_NAMED_COLOURS = {
    "white": "ffffff",
    "black": "000000",
    "transparent": "",
    "snow": "fffafa",
    "ghostwhite": "f8f8ff",
    "whitesmoke": "f5f5f5",
    "ivory": "fffff0",
}

Attrs = Mapping[str, str | None]


@dataclass(frozen=True)
class Ctx:
    """What an element inherits: text colour, background colour, inside <pre>."""

    fg: str = ""
    bg: str = "ffffff"
    pre: bool = False


def element_ctx(*, tag: str, attrs: Attrs, ctx: Ctx, hidden_classes: frozenset[str]) -> Ctx | None:
    """The context for the element's children, or None when the element is hidden."""
    if not attrs:
        return ctx if tag != "pre" else Ctx(ctx.fg, ctx.bg, True)
    if "hidden" in attrs:
        return None
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return None
    if hidden_classes:
        classes = (attrs.get("class") or "").split()
        if any(c in hidden_classes for c in classes):
            return None
    fg, bg = _colours(tag, attrs, ctx)
    if fg is None:
        return None
    if fg and fg == bg:
        return None
    pre = ctx.pre or tag == "pre"
    if (fg, bg, pre) == (ctx.fg, ctx.bg, ctx.pre):
        return ctx
    return Ctx(fg, bg, pre)


def _colours(tag: str, attrs: Attrs, ctx: Ctx) -> tuple[str | None, str]:
    """Text and background colour the element sets (fg None: its style hides it)."""
    fg, bg = ctx.fg, ctx.bg
    bgcolor = attrs.get("bgcolor")
    if bgcolor:
        bg = colour(bgcolor) or bg
    colour_attr = attrs.get("color") if tag == "font" else None
    if colour_attr:
        fg = colour(colour_attr) or fg
    style = attrs.get("style")
    if style:
        decls = declarations(style)
        if hides(decls):
            return None, bg
        if "background-color" in decls:
            bg = colour(decls["background-color"]) or bg
        elif "background" in decls:
            bg = _background_colour(decls["background"]) or bg
        if "color" in decls:
            fg = colour(decls["color"]) or fg
    return fg, bg


def declarations(style: str) -> dict[str, str]:
    return {
        name.lower(): value.replace("!important", "").strip().lower()
        for name, value in _STYLE_DECL.findall(style)
    }


def _is_zero(value: str) -> bool:
    return bool(value) and bool(_LENGTH_ZERO.match(value.replace(" ", "")))


def _number_at_most(value: str, limit: float) -> bool:
    try:
        return float(value) <= limit
    except ValueError:
        return False


def hides(decls: dict[str, str]) -> bool:
    """Whether these declarations make the element invisible."""
    if decls.get("display") == "none":
        return True
    if decls.get("visibility") in {"hidden", "collapse"}:
        return True
    opacity = decls.get("opacity", "")
    if opacity and _number_at_most(opacity.rstrip("%"), 0):
        return True
    font_size = decls.get("font-size", "")
    if font_size:
        number = font_size.replace(" ", "").removesuffix("px").removesuffix("pt")
        if _number_at_most(number, 1):
            return True
    if _is_zero(decls.get("max-height", "")) or _is_zero(decls.get("max-width", "")):
        return True
    return _is_zero(decls.get("width", "")) and _is_zero(decls.get("height", ""))


def colour(value: str) -> str:
    """A colour as 6 lowercase hex digits ('' when unknown or transparent)."""
    value = value.strip().lower().replace("!important", "").strip()
    if value in _NAMED_COLOURS:
        return _NAMED_COLOURS[value]
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) in (3, 4) and all(c in _HEX for c in digits):
            return "".join(c * 2 for c in digits[:3])
        if len(digits) in (6, 8) and all(c in _HEX for c in digits):
            return digits[:6]
        return ""
    match = _RGB.match(value)
    if match:
        alpha = match.group(4)
        if alpha is not None and alpha.rstrip("%") in {"0", "0.0", ".0"}:
            return ""
        return "".join(f"{min(255, int(match.group(i))):02x}" for i in (1, 2, 3))
    return ""


def _background_colour(value: str) -> str:
    for token in re.split(r"\s+(?![^(]*\))", value):
        found = colour(token)
        if found:
            return found
    return ""


def is_pixel(attrs: Attrs) -> bool:
    """A tracking pixel: an image 2 px or less wide or high."""
    for name in ("width", "height"):
        value = (attrs.get(name) or "").strip().lower().removesuffix("px")
        if value.isdigit() and int(value) <= 2:
            return True
    style = declarations(attrs.get("style") or "")
    for name in ("width", "height"):
        value = style.get(name, "").removesuffix("px").strip()
        if value.isdigit() and int(value) <= 2:
            return True
    return False


def hidden_classes(stylesheets: Iterable[str]) -> frozenset[str]:
    """Classes hidden by simple top-level rules of these <style> texts (`.x{display:none}`)."""
    hidden: set[str] = set()
    for sheet in stylesheets:
        css = _strip_at_blocks(_CSS_COMMENT.sub("", sheet))
        for selectors, body in _TOP_LEVEL_RULE.findall(css):
            if not hides(declarations(body)):
                continue
            for selector in selectors.split(","):
                match = _SIMPLE_CLASS.match(selector.strip())
                if match:
                    hidden.add(match.group(1))
    return frozenset(hidden)


def _strip_at_blocks(css: str) -> str:
    """CSS without @media/@supports/... blocks (rules there apply only sometimes)."""
    result: list[str] = []
    i, n = 0, len(css)
    while i < n:
        at = css.find("@", i)
        if at < 0:
            result.append(css[i:])
            break
        result.append(css[i:at])
        brace = css.find("{", at)
        semi = css.find(";", at)
        if brace < 0 or (0 <= semi < brace):
            i = n if semi < 0 else semi + 1  # @import ...; @charset ...;
            continue
        i = _block_end(css, brace) + 1
    return "".join(result)


def _block_end(css: str, brace: int) -> int:
    """Index of the `}` closing the block opened at `brace` (len(css) when never closed)."""
    depth, j, n = 0, brace, len(css)
    while j < n:
        if css[j] == "{":
            depth += 1
        elif css[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j
