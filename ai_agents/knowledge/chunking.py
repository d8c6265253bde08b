"""Sections -> chunks sized for the embedder, heading-aware and deterministic.

Invariants:
- A chunk never mixes two sections; every chunk's content starts with its heading path joined
  with " > " (then a blank line), so both the embedding and the full-text index see the context.
- Long sections split at paragraph boundaries first, then lines, then sentences, then words.
- Consecutive chunks of one section overlap by whole sentences (or lines) totalling at most
  `chunk_overlap` tokens; when the last sentence alone is longer, its trailing words are used.
- No empty chunks; `token_count` <= `chunk_size` unless a heading path alone is longer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ai_agents.knowledge.parsers import Section

HEADING_SEPARATOR = " > "


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    content: str
    heading_path: list[str]
    token_count: int


def estimate_tokens(text: str) -> int:
    """Cheap upper-leaning estimate of subword tokens.

    Multilingual sentencepiece vocabularies (XLM-R, used by multilingual-e5) spend about 1.3
    tokens per Spanish word; numbers, prices and punctuation cost more, which the chars/4 term
    catches. The max of both keeps chunks under the model's 512-token window without a tokenizer.
    """
    if not text:
        return 0
    words = len(text.split())
    if not words:
        return 0
    return max(math.ceil(words * 1.3), math.ceil(len(text) / 4))


# A unit is one sentence (or word window) plus the separator that precedes it in the section.
PARAGRAPH, LINE, SPACE = "\n\n", "\n", " "


@dataclass(frozen=True)
class _Unit:
    separator: str
    text: str
    tokens: int


_SENTENCE_END = re.compile(r"(?<=[.!?…:;])\s+(?=[¿¡\"“«(\-–—*•A-ZÁÉÍÓÚÑÜ0-9])")


def _unit_tokens(separator: str, text: str) -> int:
    # Counting the separator keeps the sum of unit estimates >= the estimate of the joined text.
    return estimate_tokens(separator + text if separator else text)


def _split_words(text: str, budget: int) -> list[str]:
    """Word windows of at most `budget` tokens (linear: counts words and chars incrementally)."""
    pieces: list[str] = []
    current: list[str] = []
    chars = 0
    for word in text.split():
        new_chars = chars + len(word) + 1
        tokens = max(math.ceil((len(current) + 1) * 1.3), math.ceil(new_chars / 4))
        if current and tokens > budget:
            pieces.append(" ".join(current))
            current, chars = [word], len(word) + 1
        else:
            current.append(word)
            chars = new_chars
    if current:
        pieces.append(" ".join(current))
    return pieces


def _units(text: str, budget: int) -> list[_Unit]:
    units: list[_Unit] = []
    for p_index, paragraph in enumerate(p for p in re.split(r"\n\s*\n", text) if p.strip()):
        for l_index, line in enumerate(x for x in paragraph.split("\n") if x.strip()):
            separator = PARAGRAPH if l_index == 0 else LINE
            if p_index == 0 and l_index == 0:
                separator = ""
            line = line.strip()
            sentences = [line] if estimate_tokens(line) <= budget else _SENTENCE_END.split(line)
            for s_index, sentence in enumerate(s.strip() for s in sentences if s.strip()):
                pieces = (
                    [sentence]
                    if estimate_tokens(sentence) <= budget
                    else _split_words(sentence, budget)
                )
                for w_index, piece in enumerate(pieces):
                    sep = separator if s_index == 0 and w_index == 0 else SPACE
                    units.append(_Unit(sep, piece, _unit_tokens(sep, piece)))
    return units


def _join(units: list[_Unit]) -> str:
    return "".join((u.separator if i else "") + u.text for i, u in enumerate(units))


def _paragraph_tokens(units: list[_Unit]) -> list[int]:
    """For each unit, the tokens from it to the end of its paragraph (one backward pass)."""
    remaining = [0] * len(units)
    total = 0
    for index in range(len(units) - 1, -1, -1):
        total += units[index].tokens
        remaining[index] = total
        if units[index].separator in (PARAGRAPH, ""):
            total = 0
    return remaining


def _overlap(previous: list[_Unit], overlap: int) -> list[_Unit]:
    tail: list[_Unit] = []
    total = 0
    for unit in reversed(previous):
        if total + unit.tokens > overlap:
            break
        tail.insert(0, unit)
        total += unit.tokens
    if not tail and overlap > 0 and previous:
        words = previous[-1].text.split()
        kept: list[str] = []
        while len(kept) < len(words) - 1:
            candidate = [words[len(words) - len(kept) - 1], *kept]
            if _unit_tokens(SPACE, " ".join(candidate)) > overlap:
                break
            kept = candidate
        if kept:
            text = " ".join(kept)
            tail = [_Unit(SPACE, text, _unit_tokens(SPACE, text))]
    return tail


def _pack(units: list[_Unit], budget: int, overlap: int) -> list[str]:
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    fresh = 0  # units in `current` that are not overlap from the previous chunk
    used = 0
    paragraph_rest = _paragraph_tokens(units)
    for index, unit in enumerate(units):
        fits = used + unit.tokens <= budget
        # Prefer ending a half-full chunk at a paragraph boundary over cutting a paragraph.
        starts_paragraph = unit.separator == PARAGRAPH
        paragraph_fits = used + paragraph_rest[index] <= budget
        early_break = starts_paragraph and not paragraph_fits and used >= budget // 2
        if fresh and (not fits or early_break):
            groups.append(current)
            current = _overlap(current, overlap)
            used = sum(u.tokens for u in current)
            while current and used + unit.tokens > budget:
                used -= current.pop(0).tokens
            fresh = 0
        current.append(unit)
        used += unit.tokens
        fresh += 1
    if fresh:
        groups.append(current)
    return [_join(group) for group in groups]


def chunk_sections(
    sections: Iterable[Section], *, chunk_size: int = 350, chunk_overlap: int = 50
) -> list[ChunkDraft]:
    if chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError("chunk_overlap must be >= 0 and smaller than chunk_size")
    drafts: list[ChunkDraft] = []
    for section in sections:
        if not section.text.strip():
            continue
        path = [h for h in section.heading_path if h.strip()]
        prefix = HEADING_SEPARATOR.join(path)
        budget = max(chunk_size - estimate_tokens(f"{prefix}\n\n"), chunk_size // 4, 1)
        for body in _pack(_units(section.text, budget), budget, min(chunk_overlap, budget // 2)):
            content = f"{prefix}\n\n{body}" if prefix else body
            drafts.append(
                ChunkDraft(
                    ordinal=len(drafts),
                    content=content,
                    heading_path=list(path),
                    token_count=estimate_tokens(content),
                )
            )
    return drafts
