"""HTML -> sections: h1-h6 open sections, block elements separate paragraphs, rows and list
items are lines, cells are joined with " | ". The tree comes from `erp.html_text`, the one
reader of HTML: non-rendered and hidden content (what a visitor of the page does not see)
never reaches the knowledge base; navigation is dropped too.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext_lazy as _
from lxml import etree

from ai_agents.knowledge.errors import CorruptDocument, EmptyDocument
from ai_agents.knowledge.parsers.base import (
    HeadingStack,
    Section,
    normalize_block,
    sections_from_blocks,
)
from erp.html_text import SKIP_TAGS, parse_html, prune

_SKIP_TAGS = SKIP_TAGS | {"nav"}
_PARAGRAPH_TAGS = frozenset(
    [
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "aside",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "table",
        "form",
        "fieldset",
        "figure",
        "figcaption",
        "address",
        "hr",
        "details",
        "summary",
        "caption",
    ]
)
_LINE_TAGS = frozenset({"br", "li", "tr", "dt", "dd", "thead", "tbody", "tfoot"})
_HEADING_TAGS = {f"h{n}": n for n in range(1, 7)}
# \x01 marks a line break, \x02 a paragraph break; runs of them collapse to the strongest.
_BREAKS = re.compile(r"[\x01\x02](?:[ \t\n\r\f\v\u00a0\x01\x02]*[\x01\x02])?")


def _breaks_to_newlines(match: re.Match[str]) -> str:
    return "\n\n" if "\x02" in match.group(0) else "\n"


def _html_root(text: str) -> Any:
    try:
        root = parse_html(text)
    except ValueError as exc:
        raise CorruptDocument(_("El archivo HTML no se pudo interpretar.")) from exc
    if root is None:
        raise EmptyDocument()
    prune(root, skip=_SKIP_TAGS)
    return root


class _Sections:
    """The walk's state: the heading being read, the open table rows, <pre> depth."""

    def __init__(self) -> None:
        self.headings = HeadingStack()
        self.blocks: list[tuple[list[str], str]] = []
        self.out: list[str] = []
        self.heading_text: list[str] | None = None  # collects text while inside h1-h6
        self.heading_level = 0
        self.rows: list[int] = []  # cells seen in each open <tr>
        self.pre_depth = 0

    def emit(self, chunk: str | None) -> None:
        if not chunk:
            return
        if self.heading_text is not None:
            self.heading_text.append(chunk)
        elif self.pre_depth:
            self.out.append(chunk.replace("\n", "\x01"))
        else:
            self.out.append(chunk.replace("\n", " "))

    def flush(self) -> None:
        raw = _BREAKS.sub(_breaks_to_newlines, "".join(self.out))
        self.blocks.append((self.headings.path, normalize_block(raw)))
        self.out.clear()

    def start(self, tag: str) -> None:
        if tag in _HEADING_TAGS and self.heading_text is None:
            self.flush()
            self.heading_text = []
            self.heading_level = _HEADING_TAGS[tag]
        elif tag in _PARAGRAPH_TAGS:
            self.out.append("\x02")
            if tag == "pre":
                self.pre_depth += 1
        elif tag in _LINE_TAGS:
            self.out.append("\x01")
            if tag == "tr":
                self.rows.append(0)
            elif tag == "li":
                self.out.append("- ")
        elif tag in ("td", "th") and self.rows:
            if self.rows[-1]:
                self.out.append(" | ")
            self.rows[-1] += 1

    def end(self, tag: str) -> None:
        if tag in _HEADING_TAGS:
            if self.heading_text is not None and _HEADING_TAGS[tag] == self.heading_level:
                title = " ".join("".join(self.heading_text).split())
                self.heading_text = None
                if title:
                    self.headings.push(self.heading_level, title)
        elif tag in _PARAGRAPH_TAGS:
            self.out.append("\x02")
            if tag == "pre":
                self.pre_depth -= 1
        elif tag in _LINE_TAGS:
            self.out.append("\x01")
            if tag == "tr" and self.rows:
                self.rows.pop()


def parse_html_sections(text: str) -> list[Section]:
    root = _html_root(text)
    state = _Sections()
    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            state.start(tag)
            state.emit(element.text)
        else:
            state.end(tag)
            state.emit(element.tail)
    state.flush()
    return sections_from_blocks(state.blocks)
