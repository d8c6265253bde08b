"""HTML -> plain text: what a reader would see, nothing a reader would not. The one reader of
HTML in the project (mail for the secretary and the e-mail channel, knowledge-base uploads).

`html_to_text(html, limit=4000)` drops style/script, ends lines at block ends, decodes entities,
compacts whitespace and blank lines and keeps at most `limit` characters; and goes further,
because mail is untrusted input that ends up in a prompt:

- non-rendered elements are dropped: head, title, style, script, template, noscript, svg, object,
  iframe, meta, link, xml; comments too (Outlook's `<!--[if mso]>` blocks and CDATA are comments
  to an HTML5 tokenizer);
- hidden content is dropped (`erp.html_text_style`: hidden attributes, hiding inline styles,
  text coloured as its background, classes hidden by simple `<style>` rules);
- zero-width characters (U+200B..U+200D, U+2060, U+FEFF), soft hyphens, bidi controls and Unicode
  tag characters are removed;
- structure is kept: block elements and `<br>` end lines, `<li>` starts with "- ", table rows are
  one line with cells separated by " | ", links read "text (url)" when the URL says something the
  text does not (mailto: duplicates skipped), images give their alt text unless they are tracking
  pixels;
- the result is cut at `limit` characters on a word boundary, ending with " […]".

`parse_html` and `prune` give the same hardened tree to readers that keep more structure
(the knowledge parser's heading-aware sections).

Speed: lxml (libxml2) is the one parser because python-docx needs it anyway; it parses about
1.6 times slower than lexbor, the fastest parser measured (5 MB: ~290 against ~180 ms at best
on a loaded 2-core machine; a 50 KB mail ~5 ms either way). The Python walk stops once enough
visible text has been collected (or MAX_NODES nodes visited), so a 5 MB message costs little
more than its parse (`bench/html_to_text.py`). HTML nested deeper than MAX_DEPTH
(no real mail comes close; libxml2 drops what lies deeper than its own limit) skips the parser
and gets a linear tag strip (`erp.html_text_crude`), as does a parser failure: it never raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import accumulate
from typing import Any

from lxml import etree

from erp.html_text_crude import crude_text
from erp.html_text_style import Attrs, Ctx, element_ctx, hidden_classes, is_pixel

ELLIPSIS = " […]"
MAX_URL_CHARS = 200
# The real mails of the fixtures nest at most 6 deep; libxml2 keeps 2,048 levels (huge_tree).
MAX_DEPTH = 500
# Nodes the walk visits at most: a 5 MB newsletter shows its text long before; 5 MB of empty
# markup would otherwise cost several parses' time in Python.
MAX_NODES = 100_000

SKIP_TAGS = frozenset(
    [
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
    ]
)
# Ends (and starts) a line.
BLOCK_TAGS = frozenset(
    [
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
    ]
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
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
# Start tags that open a level: void elements and those whose end tag is implied are left out.
# (area, base, br, col, dd, dt, embed, hr, img, input, li, link, meta, option, optgroup, p,
# param, rb, rp, rt, source, td, th, tr, track, wbr; as a trie, which the regex engine tries faster)
_NESTING_TAG = re.compile(
    r"<(/?)(?!(?:area|b(?:ase|r)|col|d[dt]|embed|hr|i(?:mg|nput)|li(?:nk)?|meta|"
    r"opt(?:ion|group)|p(?:aram)?|r[bpt]|source|t(?:[dhr]|rack)|wbr)\b)[a-z]",
    re.I,
)
_NESTING_DELTA = {"": 1, "/": -1}


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

    def source(self, value: str | None, ctx: Ctx) -> None:
        """Text as written in the document: spaces collapse outside <pre>."""
        if not value:
            return
        if not ctx.pre:
            value = _SPACES.sub(" ", value)
        self.text(value)

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
        raw = crude_text(html)
    else:
        try:
            raw = _render(html, budget=limit + 200)
        except Exception:  # never raise on hostile input; degrade instead
            raw = crude_text(html)
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


# --- The tree ------------------------------------------------------------------------------
def parse_html(html: str) -> Any | None:
    """The document's root element (None when there is none). Comments, processing
    instructions and the network are off; a declared encoding is ignored (the text is already
    decoded). Raises ValueError when libxml2 gives up."""
    parser = etree.HTMLParser(
        encoding="utf-8",
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        recover=True,
        huge_tree=True,
    )
    try:
        # Bytes, not str: lxml rejects str input that carries an XML encoding declaration.
        return etree.fromstring(html.encode("utf-8", "replace"), parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError) as exc:
        raise ValueError(str(exc)) from exc


def page_hidden_classes(root: Any) -> frozenset[str]:
    """Classes the document's own <style> elements hide."""
    return hidden_classes("".join(node.itertext()) for node in root.iter("style"))


def prune(root: Any, *, skip: Iterable[str] = SKIP_TAGS) -> None:
    """Removes non-rendered (`skip`) and hidden elements with their content, keeping the text
    that follows them: for readers that walk the whole tree (html_to_text stays lazy)."""
    skipped = frozenset(skip)
    classes = page_hidden_classes(root)
    stack: list[tuple[Any, Ctx]] = [(root, Ctx())]
    doomed = []
    while stack:
        element, ctx = stack.pop()
        for child in element:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            child_ctx = None
            if tag not in skipped:
                child_ctx = element_ctx(
                    tag=tag, attrs=child.attrib, ctx=ctx, hidden_classes=classes
                )
            if child_ctx is None:
                doomed.append(child)
            else:
                stack.append((child, child_ctx))
    for element in doomed:
        drop_keep_tail(element)


def drop_keep_tail(element: Any) -> None:
    """Remove an element and its subtree but keep the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail or ""
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


# --- Rendering -----------------------------------------------------------------------------
def _render(html: str, *, budget: int) -> str:
    root = parse_html(html)
    if root is None:
        return ""
    classes = page_hidden_classes(root)
    body = root.find("body")
    out = _Out(budget)
    _walk(root if body is None else body, out, classes)
    return "".join(out.parts)


def _walk(root: Any, out: _Out, classes: frozenset[str]) -> None:
    # Iterative depth-first walk (no recursion limit on absurdly nested mail): one frame per
    # open element holds its children's iterator, the context they inherit, what to run when it
    # closes and the element (whose tail follows the close, in the parent's context).
    out.source(root.text, Ctx())
    frames: list[list[Any]] = [[iter(root), Ctx(), None, root]]
    visits = 0
    while frames and not out.full and visits < MAX_NODES:
        visits += 1
        frame = frames[-1]
        node = next(frame[0], None)
        if node is None:
            frames.pop()
            if frame[2] is not None:
                frame[2]()
            if frames:
                out.source(frame[3].tail, frames[-1][1])
            continue
        tag = node.tag
        attrs = node.attrib
        ctx = None
        if isinstance(tag, str) and tag not in SKIP_TAGS:
            ctx = element_ctx(tag=tag, attrs=attrs, ctx=frame[1], hidden_classes=classes)
        if ctx is None:  # comments, non-rendered or hidden elements: the whole subtree goes
            out.source(node.tail, frame[1])
            continue
        closer = _open(tag, attrs, out)
        out.source(node.text, ctx)
        frames.append([iter(node), ctx, closer, node])


def _open(tag: str, attrs: Attrs, out: _Out) -> Callable[[], None] | None:
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
        if alt and not is_pixel(attrs):
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
    lowered = href.lower()
    if not text or lowered.startswith(("javascript:", "data:", "vbscript:", "cid:")):
        return
    if lowered.startswith("mailto:"):
        target = href[7:].split("?", 1)[0]
    elif lowered.startswith("tel:"):
        target = href[4:]
    else:
        target = href
    if _same(target, text):
        return
    if len(target) > MAX_URL_CHARS:
        target = target[:MAX_URL_CHARS] + "…"
    out.text(f" ({target})")


def _same(url: str, text: str) -> bool:
    def canon(value: str) -> str:
        value = _URL_SCHEME.sub("", value.strip().lower())
        return value.removeprefix("www.").rstrip("/")

    return canon(url) == canon(text)
