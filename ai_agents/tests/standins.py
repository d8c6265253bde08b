"""Minimal stand-ins for ai_agents.knowledge.parsers/chunking (written by another branch),
registered by conftest only while the real modules are missing."""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass, field


class DocumentError(Exception):
    pass


class EmptyDocument(DocumentError):
    pass


class UnsupportedDocument(DocumentError):
    pass


class CorruptDocument(DocumentError):
    pass


@dataclass
class Section:
    heading_path: list[str]
    text: str


@dataclass
class ParsedDocument:
    text: str
    sections: list[Section] = field(default_factory=list)
    mime_type: str = "text/plain"


@dataclass
class ChunkDraft:
    ordinal: int
    content: str
    heading_path: list[str]
    token_count: int


def parse_document(data: bytes, *, filename: str, mime_type: str | None) -> ParsedDocument:
    name = filename.lower()
    if name.endswith(".pdf") or mime_type == "application/pdf":
        raise CorruptDocument("El PDF está dañado o no se puede leer.")
    if not name.endswith((".txt", ".md")) and mime_type not in ("text/plain", "text/markdown"):
        raise UnsupportedDocument("Tipo de archivo no admitido.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsupportedDocument("El archivo no es texto legible.") from None
    if "\x00" in text:
        raise UnsupportedDocument("El archivo no es texto legible.")
    if not text.strip():
        raise EmptyDocument("El documento está vacío.")
    sections: list[Section] = []
    path: list[str] = []
    buf: list[str] = []
    for line in text.splitlines():
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if m:
            if "".join(buf).strip():
                sections.append(Section(list(path), "\n".join(buf).strip()))
            buf = []
            path = [*path[: len(m.group(1)) - 1], m.group(2).strip()]
        else:
            buf.append(line)
    if "".join(buf).strip():
        sections.append(Section(list(path), "\n".join(buf).strip()))
    return ParsedDocument(text, sections, "text/markdown" if name.endswith(".md") else "text/plain")


def chunk_sections(
    sections: list[Section], *, chunk_size: int, chunk_overlap: int
) -> list[ChunkDraft]:
    out: list[ChunkDraft] = []
    step_words = max(1, int(chunk_size * 0.75) - int(chunk_overlap * 0.75))
    size_words = max(1, int(chunk_size * 0.75))
    for section in sections:
        words = section.text.split()
        for start in range(0, len(words), step_words):
            part = words[start : start + size_words]
            out.append(ChunkDraft(len(out), " ".join(part), section.heading_path, len(part)))
            if start + size_words >= len(words):
                break
    return out


def install() -> None:
    parsers = types.ModuleType("ai_agents.knowledge.parsers")
    for name in (
        "DocumentError",
        "EmptyDocument",
        "UnsupportedDocument",
        "CorruptDocument",
        "Section",
        "ParsedDocument",
        "parse_document",
    ):
        setattr(parsers, name, globals()[name])
    chunking = types.ModuleType("ai_agents.knowledge.chunking")
    chunking.ChunkDraft = ChunkDraft  # type: ignore[attr-defined]
    chunking.chunk_sections = chunk_sections  # type: ignore[attr-defined]
    sys.modules["ai_agents.knowledge.parsers"] = parsers
    sys.modules["ai_agents.knowledge.chunking"] = chunking
