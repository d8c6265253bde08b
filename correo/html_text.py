"""HTML e-mail -> plain text for the model: what a reader would see, nothing a reader would not.

`html_to_text(html, limit=4000)` follows these rules (no style/script, block ends to line
breaks, entities decoded, whitespace and blank lines compacted, at most `limit` characters) and
goes further, because mail is untrusted input that ends up in a prompt:

- non-rendered elements are dropped: head, title, style, script, template, noscript, svg, object,
  iframe, meta, link, xml; comments too (Outlook's `<!--[if mso]>` blocks and CDATA are comments
  to an HTML5 parser);
- hidden content is dropped: the `hidden` attribute, `aria-hidden="true"`, inline styles with
  display:none, visibility:hidden, opacity:0, font-size 0/1px, max-height:0 or width:0 and height:0,
  text whose colour equals the background it sits on (inline `color` against the nearest
  `background(-color)` / `bgcolor`, white when none), and classes hidden by simple top-level
  `<style>` rules (`.x{display:none}`);
- zero-width characters (U+200B..U+200D, U+2060, U+FEFF), soft hyphens, bidi controls and Unicode
  tag characters are removed;
- structure is kept: block elements and `<br>` end lines, `<li>` starts with "- ", table rows are
  one line with cells separated by " | ", links read "text (url)" when the URL says something the
  text does not (mailto: duplicates skipped), images give their alt text unless they are tracking
  pixels;
- the result is cut at `limit` characters on a word boundary, ending with " […]".

Speed: lexbor (selectolax) parses in C; the Python walk stops once enough visible text has been
collected (or MAX_NODES nodes visited), so a 5 MB message costs little more than its parse.
The parse itself costs the square of the nesting depth (100,000 nested `<div>`s ~ 100 s of
CPU), so HTML nested deeper than MAX_DEPTH (no real mail comes close) skips the parser and gets
a linear tag strip, as does a parser failure: it never raises.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

ELLIPSIS = " […]"
MAX_URL_CHARS = 200
# The real mails of the fixtures nest at most 6 deep; 500 deep parses in about 2 ms.
MAX_DEPTH = 500
# Nodes the walk visits at most: a 5 MB newsletter shows its text long before; 5 MB of empty
# markup would otherwise cost several parses' time in Python.
MAX_NODES = 100_000

SKIP_TAGS = frozenset(
    {
        "head",
        "title",
        "style",
        "script",
        "template",
        "noscript",
        "svg",
        "math",
        "object",
        "embed",
        "iframe",
        "frame",
        "frameset",
        "meta",
        "link",
        "base",
        "xml",
        "select",
        "datalist",
        "input",
        "button",
        "map",
        "area",
        "audio",
        "video",
        "canvas",
        "picture",
        "source",
    }
)
# Ends (and starts) a line.
BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hgroup",
        "hr",
        "legend",
        "main",
        "nav",
        "ol",
        "section",
        "summary",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "caption",
        "tr",
        "ul",
        "body",
        "html",
    }
)
# Separated from their neighbours by a blank line.
PARAGRAPH_TAGS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote"})
CELL_TAGS = frozenset({"td", "th"})

_INVISIBLE_CHARS = re.compile(
    "[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_LINE_SPACES = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_EDGE_PIPES = re.compile(r"^(?:\|\s*)+|(?:\s*\|)+$")
_STYLE_DECL = re.compile(r"([a-zA-Z-]+)\s*:\s*([^;]*)")
_TOP_LEVEL_RULE = re.compile(r"([^{}@]+)\{([^{}]*)\}")
_SIMPLE_CLASS = re.compile(r"^\.([A-Za-z0-9_-]+)$")
_LENGTH_ZERO = re.compile(r"^-?0*\.?0*(px|pt|em|rem|%)?$")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)

_NAMED_COLOURS = {
    "white": "ffffff",
    "black": "000000",
    "transparent": "",
    "snow": "fffafa",
    "ghostwhite": "f8f8ff",
    "whitesmoke": "f5f5f5",
    "ivory": "fffff0",
}
# Every pattern below scans each character a bounded number of times (no `.*?` to a closing
# tag that may never come): the crude strip must stay linear on hostile input.
_FALLBACK_SKIPPED = re.compile(r"<(script|style|head|template)\b|<!--", re.I)
_FALLBACK_BREAKS = re.compile(
    r"<(?:br|/?(?:p|div|tr|li|h[1-6]|table|ul|ol|blockquote|pre|hr))\b[^<>]*>", re.I
)
_FALLBACK_TAGS = re.compile(r"<[^<>]*>")
# Start tags that open a level: void elements and those whose end tag is implied are left out.
# (area, base, br, col, dd, dt, embed, hr, img, input, li, link, meta, option, optgroup, p,
# param, rb, rp, rt, source, td, th, tr, track, wbr; as a trie, which the regex engine tries faster)
_NESTING_TAG = re.compile(
    r"<(/?)(?!(?:area|b(?:ase|r)|col|d[dt]|embed|hr|i(?:mg|nput)|li(?:nk)?|meta|"
    r"opt(?:ion|group)|p(?:aram)?|r[bpt]|source|t(?:[dhr]|rack)|wbr)\b)[a-z]",
    re.I,
)
_NESTING_DELTA = {"": 1, "/": -1}


@dataclass(frozen=True)
class _Ctx:
    """What an element inherits: text colour, background colour, inside <pre>."""

    fg: str = ""
    bg: str = "ffffff"
    pre: bool = False


class _Out:
    """Collects text pieces; stops the walk once `budget` visible characters are in.

    Line breaks requested by nested blocks do not add up: a request is "at least n newlines
    before the next text", so `</td></tr><tr><td>` is one line break, `</p><p>` one blank line.
    """

    def __init__(self, budget: int) -> None:
        self.parts: list[str] = []
        self.visible = 0
        self.budget = budget
        self.pending = 0

    def text(self, value: str) -> None:
        if self.pending:
            if value.isspace():
                return  # spaces at the start of a line are never seen
            if self.parts:
                self.parts.append("\n" * self.pending)
            self.pending = 0
        self.parts.append(value)
        self.visible += len(value)

    def newline(self, count: int = 1) -> None:
        self.pending = max(self.pending, count)

    def line_break(self) -> None:
        """`<br>`: every one counts."""
        self.pending += 1

    @property
    def full(self) -> bool:
        return self.visible > self.budget


def html_to_text(html: str, *, limit: int = 4000) -> str:
    """Visible text of an HTML e-mail, at most `limit` characters (see the module docstring)."""
    if not html or not html.strip():
        return ""
    if too_nested(html):
        raw = _crude(html)
    else:
        try:
            raw = _render(html, budget=limit + 200)
        except Exception:  # never raise on hostile input; degrade instead
            raw = _crude(html)
    return truncate(normalise(raw), limit)


def too_nested(html: str) -> bool:
    """Whether elements nest deeper than MAX_DEPTH, counted in linear time before any parse.

    Unclosed elements count as open, so sloppy HTML errs towards the crude strip; an end tag
    without a start tag is ignored (as a browser does), so stray `</div>`s hide nothing."""
    if html.count("<") <= MAX_DEPTH:
        return False
    deltas = map(_NESTING_DELTA.__getitem__, _NESTING_TAG.findall(html))
    return max(accumulate(deltas, _depth_step, initial=0)) > MAX_DEPTH


def _depth_step(depth: int, delta: int) -> int:
    return depth + delta if depth + delta > 0 else 0  # a stray end tag closes nothing


def normalise(raw: str) -> str:
    """Drops invisible characters, compacts spaces per line and blank lines."""
    raw = _INVISIBLE_CHARS.sub("", raw)
    lines = []
    for line in raw.split("\n"):
        line = _LINE_SPACES.sub(" ", line).strip()
        line = _EDGE_PIPES.sub("", line).strip()
        lines.append(line)
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, on a word boundary, with an ellipsis marker."""
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return text[:limit]
    room = limit - len(ELLIPSIS)
    cut = text[:room]
    boundary = max(cut.rfind(" "), cut.rfind("\n"))
    if boundary >= room * 0.8:
        cut = cut[:boundary]
    return cut.rstrip() + ELLIPSIS


# --- Rendering -----------------------------------------------------------------------------
def _render(html: str, *, budget: int) -> str:
    tree = LexborHTMLParser(html)
    hidden_classes = _hidden_classes(tree)
    root = tree.body or tree.root
    if root is None:
        return ""
    out = _Out(budget)
    _walk(root, out, hidden_classes)
    return "".join(out.parts)


def _walk(root: LexborNode, out: _Out, hidden_classes: frozenset[str]) -> None:
    # Iterative depth-first walk along child/next pointers (no recursion limit on absurdly
    # nested mail, no list of siblings built): one frame per open element holds the next child
    # to visit, the context its children inherit and what to run when it closes.
    frames: list[list[Any]] = [[root.child, _Ctx(), None]]
    visits = 0
    while frames and not out.full and visits < MAX_NODES:
        visits += 1
        frame = frames[-1]
        node = frame[0]
        if node is None:
            frames.pop()
            if frame[2] is not None:
                frame[2]()
            continue
        frame[0] = node.next
        tag = node.tag
        if tag == "-text":
            value = node.text_content or ""
            if not frame[1].pre:
                value = _SPACES.sub(" ", value)
            if value:
                out.text(value)
            continue
        if not tag or tag[0] in "-!#" or tag in SKIP_TAGS:
            continue  # comments, doctype, non-rendered elements
        attrs = node.attributes
        ctx = _element_ctx(tag, attrs, frame[1], hidden_classes)
        if ctx is None:
            continue  # hidden: the whole subtree goes
        closer = _open(tag, attrs, out)
        child = node.child
        if child is None:
            if closer is not None:
                closer()
        else:
            frames.append([child, ctx, closer])


def _open(tag: str, attrs: dict[str, str | None], out: _Out) -> Callable[[], None] | None:
    """Emits what an element's start produces; returns the closer to run after its children."""
    if tag == "br":
        out.line_break()
        return None
    if tag == "hr":
        out.newline()
        out.text("---")
        out.newline()
        return None
    if tag == "img":
        alt = (attrs.get("alt") or "").strip()
        if alt and not _is_pixel(attrs):
            out.text(f" [{_SPACES.sub(' ', alt)}] ")
        return None
    if tag == "li":
        out.newline()
        out.text("- ")
        return lambda: out.newline()
    if tag in PARAGRAPH_TAGS:
        out.newline(2)
        return lambda: out.newline(2)
    if tag in BLOCK_TAGS:
        out.newline()
        return lambda: out.newline()
    if tag in CELL_TAGS:
        slot = len(out.parts)
        out.parts.append("")
        return lambda: _close_cell(out, slot)
    if tag == "a":
        start = len(out.parts)
        href = (attrs.get("href") or "").strip()
        return lambda: _close_link(out, start, href)
    return None


def _close_cell(out: _Out, slot: int) -> None:
    parts = out.parts
    if not any(not parts[i].isspace() and parts[i] for i in range(slot + 1, len(parts))):
        return  # an empty cell (spacer) gets no separator
    # A separator before this cell when an earlier cell of the same line had content.
    for i in range(slot - 1, -1, -1):
        part = parts[i]
        if part.rsplit("\n", 1)[-1].strip():
            parts[slot] = " | "
            return
        if "\n" in part:
            return


def _close_link(out: _Out, start: int, href: str) -> None:
    if not href or href.startswith("#"):
        return
    text = _SPACES.sub(" ", "".join(out.parts[start:])).strip()
    if not text:
        return
    lowered = href.lower()
    if lowered.startswith(("javascript:", "data:", "vbscript:", "cid:")):
        return
    if lowered.startswith("mailto:"):
        target = href[7:].split("?", 1)[0]
        if _same(target, text):
            return
    elif lowered.startswith("tel:"):
        target = href[4:]
        if _same(target, text):
            return
    else:
        target = href
        if _same(target, text):
            return
    if len(target) > MAX_URL_CHARS:
        target = target[:MAX_URL_CHARS] + "…"
    out.text(f" ({target})")


def _same(url: str, text: str) -> bool:
    def canon(value: str) -> str:
        value = value.strip().lower()
        value = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value)
        value = value.removeprefix("www.")
        return value.rstrip("/")

    return canon(url) == canon(text)


def _is_pixel(attrs: dict[str, str | None]) -> bool:
    for name in ("width", "height"):
        value = (attrs.get(name) or "").strip().lower().removesuffix("px")
        if value.isdigit() and int(value) <= 2:
            return True
    style = _declarations(attrs.get("style") or "")
    for name in ("width", "height"):
        value = style.get(name, "").removesuffix("px").strip()
        if value.isdigit() and int(value) <= 2:
            return True
    return False


# --- Hidden content ------------------------------------------------------------------------
def _element_ctx(
    tag: str, attrs: dict[str, str | None], ctx: _Ctx, hidden_classes: frozenset[str]
) -> _Ctx | None:
    """The context for the element's children, or None when the element is hidden."""
    if not attrs:
        return ctx if tag != "pre" else _Ctx(ctx.fg, ctx.bg, True)
    if "hidden" in attrs:
        return None
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return None
    if hidden_classes:
        classes = (attrs.get("class") or "").split()
        if any(c in hidden_classes for c in classes):
            return None
    fg, bg = ctx.fg, ctx.bg
    bgcolor = attrs.get("bgcolor")
    if bgcolor:
        bg = _colour(bgcolor) or bg
    colour_attr = attrs.get("color") if tag == "font" else None
    if colour_attr:
        fg = _colour(colour_attr) or fg
    style = attrs.get("style")
    if style:
        decls = _declarations(style)
        if _hides(decls):
            return None
        if "background-color" in decls:
            bg = _colour(decls["background-color"]) or bg
        elif "background" in decls:
            bg = _background_colour(decls["background"]) or bg
        if "color" in decls:
            fg = _colour(decls["color"]) or fg
    if fg and fg == bg:
        return None
    pre = ctx.pre or tag == "pre"
    if (fg, bg, pre) == (ctx.fg, ctx.bg, ctx.pre):
        return ctx
    return _Ctx(fg, bg, pre)


def _declarations(style: str) -> dict[str, str]:
    return {
        name.lower(): value.replace("!important", "").strip().lower()
        for name, value in _STYLE_DECL.findall(style)
    }


def _is_zero(value: str) -> bool:
    return bool(value) and bool(_LENGTH_ZERO.match(value.replace(" ", "")))


def _hides(decls: dict[str, str]) -> bool:
    if decls.get("display") == "none":
        return True
    if decls.get("visibility") in {"hidden", "collapse"}:
        return True
    opacity = decls.get("opacity", "")
    if opacity:
        try:
            if float(opacity.rstrip("%")) <= 0:
                return True
        except ValueError:
            pass
    font_size = decls.get("font-size", "")
    if font_size:
        number = font_size.replace(" ", "").removesuffix("px").removesuffix("pt")
        try:
            if float(number) <= 1:
                return True
        except ValueError:
            pass
    if _is_zero(decls.get("max-height", "")) or _is_zero(decls.get("max-width", "")):
        return True
    return _is_zero(decls.get("width", "")) and _is_zero(decls.get("height", ""))


def _colour(value: str) -> str:
    """A colour as 6 lowercase hex digits ('' when unknown or transparent)."""
    value = value.strip().lower().replace("!important", "").strip()
    if value in _NAMED_COLOURS:
        return _NAMED_COLOURS[value]
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) in (3, 4) and all(c in "0123456789abcdef" for c in digits):
            return "".join(c * 2 for c in digits[:3])
        if len(digits) in (6, 8) and all(c in "0123456789abcdef" for c in digits):
            return digits[:6]
        return ""
    match = re.match(r"rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)\s*(?:[,/]\s*([\d.]+%?))?\s*\)", value)
    if match:
        alpha = match.group(4)
        if alpha is not None and alpha.rstrip("%") in {"0", "0.0", ".0"}:
            return ""
        return "".join(f"{min(255, int(match.group(i))):02x}" for i in (1, 2, 3))
    return ""


def _background_colour(value: str) -> str:
    for token in re.split(r"\s+(?![^(]*\))", value):
        colour = _colour(token)
        if colour:
            return colour
    return ""


def _hidden_classes(tree: LexborHTMLParser) -> frozenset[str]:
    """Classes hidden by simple top-level rules in <style> (`.x{display:none}`)."""
    hidden: set[str] = set()
    for node in tree.css("style"):
        css = _CSS_COMMENT.sub("", node.text(deep=True) or "")
        css = _strip_at_blocks(css)
        for selectors, body in _TOP_LEVEL_RULE.findall(css):
            if not _hides(_declarations(body)):
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
        depth, j = 0, brace
        while j < n:
            if css[j] == "{":
                depth += 1
            elif css[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        i = j + 1
    return "".join(result)


def _crude(html: str) -> str:
    """Text without tags, comments, scripts and styles, in one linear pass (no structure kept
    beyond line breaks, hidden text not recognised)."""
    lowered = html.lower()
    pieces: list[str] = []
    position = 0
    while True:
        match = _FALLBACK_SKIPPED.search(html, position)
        if match is None:
            pieces.append(html[position:])
            break
        pieces.append(html[position : match.start()])
        name = match.group(1)
        end_marker = "-->" if name is None else f"</{name.lower()}"
        end = lowered.find(end_marker, match.end())
        if end < 0:
            break  # never closed: the rest is not text, as in a browser
        position = end + len(end_marker)
        if name is not None:
            close = html.find(">", position)
            position = len(html) if close < 0 else close + 1
        pieces.append(" ")
    text = _FALLBACK_BREAKS.sub("\n", "".join(pieces))
    return html_lib.unescape(_FALLBACK_TAGS.sub(" ", text))
