"""What every format parser shares: the budget being spent, the sections it produces and the
text helpers that give all formats the same paragraph and heading conventions."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.translation import gettext_lazy as _

from ai_agents.knowledge.errors import DocumentTooComplex

MIME_TEXT = "text/plain"


@dataclass(frozen=True)
class ParseBudget:
    """What reading one document may cost. pypdf reads about 1 MB of page content per second
    (less on a busy machine), so 32 MB stays well inside two minutes."""

    max_pages: int = 1000
    max_pdf_content_bytes: int = 32 * 1024 * 1024
    max_seconds: float = 120.0
    max_text_chars: int = 5_000_000  # ~2,500 chunks: about 6 minutes of offline embedding


class Meter:
    """The budget being spent: `tick()` checks the time (and calls the checkpoint)."""

    def __init__(self, budget: ParseBudget, checkpoint: Callable[[], None] | None) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget.max_seconds
        self.checkpoint = checkpoint
        self.chars = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise DocumentTooComplex(
                _(
                    "El documento tardó demasiado en leerse (más de %(seconds)s s). Divídalo en "
                    "partes más pequeñas."
                )
                % {"seconds": f"{self.budget.max_seconds:g}"}
            )
        if self.checkpoint is not None:
            self.checkpoint()

    def add_text(self, chars: int) -> None:
        self.chars += chars
        self.check_text(self.chars)

    def check_text(self, chars: int) -> None:
        if chars > self.budget.max_text_chars:
            raise DocumentTooComplex(
                _(
                    "El documento tiene más de %(chars)d caracteres de texto. Divídalo en partes "
                    "más pequeñas."
                )
                % {"chars": self.budget.max_text_chars}
            )


@dataclass(frozen=True)
class Section:
    heading_path: list[str]
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    text: str
    sections: list[Section] = field(default_factory=list)
    mime_type: str = MIME_TEXT


_SPACES = re.compile(r"[ \t\f\v\u00a0\u200b]+")
_LINE_EDGES = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{2,}")


def normalize_block(text: str) -> str:
    """Collapse spaces inside lines, keep single newlines, at most one blank line in a row."""
    text = _SPACES.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _LINE_EDGES.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def sections_from_blocks(blocks: list[tuple[list[str], str]]) -> list[Section]:
    return [Section(heading_path=list(path), text=text) for path, text in blocks if text.strip()]


def full_text(sections: list[Section]) -> str:
    parts: list[str] = []
    previous: list[str] = []
    for section in sections:
        if section.heading_path and section.heading_path != previous:
            parts.append(" > ".join(section.heading_path))
        parts.append(section.text)
        previous = section.heading_path
    return "\n\n".join(parts)


class HeadingStack:
    """Heading path bookkeeping: a heading of level n replaces levels >= n."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def push(self, level: int, title: str) -> None:
        if not title:
            return
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, title))

    @property
    def path(self) -> list[str]:
        return [title for _, title in self._stack]
