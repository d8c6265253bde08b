"""Markdown -> sections: ATX and setext headings open sections; fences, tables and inline
markup are reduced to their text."""

from __future__ import annotations

import re

from ai_agents.knowledge.parsers.base import (
    HeadingStack,
    Section,
    normalize_block,
    sections_from_blocks,
)

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-{2,})[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:<)?([^)\s>]+)(?:>)?(?:\s+\"[^\"]*\")?\)")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _markdown_inline(line: str) -> str:
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m[1]} ({m[2]})", line)
    line = _EMPHASIS.sub(r"\2", line)
    return _CODE_SPAN.sub(r"\1", line)


def _markdown_table_row(line: str) -> str:
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return " | ".join(cells)


def parse_markdown(text: str) -> list[Section]:
    text = _HTML_COMMENT.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    headings = HeadingStack()
    blocks: list[tuple[list[str], str]] = []
    body: list[str] = []
    fence: str | None = None

    def flush() -> None:
        blocks.append((headings.path, normalize_block("\n".join(body))))
        body.clear()

    for index, line in enumerate(lines):
        if fence is not None:
            body.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        fence_match = _FENCE.match(line)
        if fence_match:
            fence = fence_match.group(1)
            body.append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            flush()
            headings.push(len(atx.group(1)), _markdown_inline((atx.group(2) or "").strip()))
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        setext = _SETEXT.match(following)
        previous_blank = index == 0 or not lines[index - 1].strip()
        if setext and line.strip() and previous_blank and not line.lstrip().startswith(("-", "*")):
            flush()
            headings.push(
                1 if setext.group(1).startswith("=") else 2, _markdown_inline(line.strip())
            )
            lines[index + 1] = ""  # the underline is consumed
            continue
        if (
            _TABLE_SEPARATOR.match(line)
            and "-" in line
            and ("|" in line or (body and "|" in body[-1]))
        ):
            continue
        if _THEMATIC_BREAK.match(line):
            body.append("")
            continue
        if line.lstrip().startswith("|"):
            body.append(_markdown_table_row(_markdown_inline(line)))
            continue
        body.append(_markdown_inline(line))
    flush()
    return sections_from_blocks(blocks)
