from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from django.conf import settings

from ai_agents.knowledge.chunking import ChunkDraft, chunk_sections, estimate_tokens
from ai_agents.knowledge.parsers import Section, parse_document

ROOT = Path(settings.BASE_DIR) / "fixtures"  # wherever this test file lives
DEMO_KB = ROOT / "demo_kb"
EVAL_FILE = ROOT / "kb_eval_demo.jsonl"


def body(chunk: ChunkDraft) -> str:
    prefix = " > ".join(chunk.heading_path)
    assert chunk.content.startswith(f"{prefix}\n\n")
    return chunk.content[len(prefix) + 2 :]


def sentence(n: int) -> str:
    return f"La frase número {n} habla del pan de masa madre y sus horarios de horneado."


def paragraph(start: int, count: int) -> str:
    return " ".join(sentence(n) for n in range(start, start + count))


# -- estimate_tokens -------------------------------------------------------------------------


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("   ") == 0
    assert estimate_tokens("hola") == 2  # 1 word * 1.3 -> 2
    assert estimate_tokens("uno dos tres cuatro cinco seis siete ocho nueve diez") == 13
    assert estimate_tokens("$1,950.00/MXN") == 4  # few words, many characters: chars / 4
    assert estimate_tokens("a b") < estimate_tokens("a b c d e f")


# -- shape -----------------------------------------------------------------------------------


def test_short_sections_give_one_chunk_each_with_heading_context() -> None:
    chunks = chunk_sections(
        [
            Section([], "Texto sin titulo."),
            Section(["Menú", "Pan dulce"], "Concha $18."),
            Section(["Menú", "Café"], "  \n "),
            Section(["Horarios"], "Domingo de 8:00 a 15:00."),
        ]
    )
    assert [(c.ordinal, c.content, c.heading_path) for c in chunks] == [
        (0, "Texto sin titulo.", []),
        (1, "Menú > Pan dulce\n\nConcha $18.", ["Menú", "Pan dulce"]),
        (2, "Horarios\n\nDomingo de 8:00 a 15:00.", ["Horarios"]),
    ]
    assert [c.token_count for c in chunks] == [estimate_tokens(c.content) for c in chunks]


def test_no_sections_no_chunks() -> None:
    assert chunk_sections([]) == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_invalid_sizes(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_sections([Section([], "x")], chunk_size=size, chunk_overlap=overlap)


# -- splitting -------------------------------------------------------------------------------


def test_long_section_splits_at_paragraphs_without_overlap() -> None:
    paragraphs = [paragraph(10 * i, 3) for i in range(12)]
    chunks = chunk_sections(
        [Section(["Guía"], "\n\n".join(paragraphs))], chunk_size=120, chunk_overlap=0
    )
    assert len(chunks) > 3
    assert all(c.token_count <= 120 for c in chunks)
    rebuilt = []
    for chunk in chunks:
        parts = body(chunk).split("\n\n")
        assert all(part in paragraphs for part in parts)  # whole paragraphs only
        rebuilt.extend(parts)
    assert rebuilt == paragraphs


def test_long_paragraph_splits_at_sentences_with_overlap() -> None:
    text = paragraph(0, 40)
    chunks = chunk_sections([Section(["A", "B"], text)], chunk_size=100, chunk_overlap=30)
    assert len(chunks) > 3
    for previous, current in itertools.pairwise(chunks):
        assert previous.token_count <= 100 and current.token_count <= 100
        assert body(previous).endswith(".")
        shared = _shared_prefix_suffix(body(previous), body(current))
        assert shared, "consecutive chunks of one section overlap"
        assert 0 < estimate_tokens(shared) <= 30
    # every sentence is in some chunk, in order
    for n in range(40):
        assert any(sentence(n) in c.content for c in chunks)


def _shared_prefix_suffix(previous: str, current: str) -> str:
    for size in range(min(len(previous), len(current)), 0, -1):
        if previous.endswith(current[:size]):
            return current[:size]
    return ""


def test_overlap_never_crosses_sections() -> None:
    chunks = chunk_sections(
        [Section(["Uno"], paragraph(0, 20)), Section(["Dos"], paragraph(100, 20))],
        chunk_size=100,
        chunk_overlap=40,
    )
    uno = [c for c in chunks if c.heading_path == ["Uno"]]
    dos = [c for c in chunks if c.heading_path == ["Dos"]]
    assert uno and dos and len(uno) + len(dos) == len(chunks)
    numbers = {id(c): {int(n) for n in re.findall(r"número (\d+)", c.content)} for c in chunks}
    assert all(numbers[id(c)] and max(numbers[id(c)]) < 100 for c in uno)
    assert all(numbers[id(c)] and min(numbers[id(c)]) >= 100 for c in dos)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_text_without_punctuation_splits_by_words() -> None:
    words = [f"palabra{n}" for n in range(2000)]
    chunks = chunk_sections([Section([], " ".join(words))], chunk_size=80, chunk_overlap=0)
    assert all(0 < c.token_count <= 80 for c in chunks)
    assert " ".join(c.content for c in chunks).split() == words


def test_chunking_is_deterministic() -> None:
    section = Section(["A"], "\n\n".join(paragraph(7 * i, 5) for i in range(20)))
    first = chunk_sections([section], chunk_size=150, chunk_overlap=40)
    assert first == chunk_sections([section], chunk_size=150, chunk_overlap=40)
    assert all(c.content.strip() for c in first)


# -- demo knowledge base and its evaluation set ----------------------------------------------


def demo_chunks() -> dict[str, list[ChunkDraft]]:
    result = {}
    for path in sorted(DEMO_KB.glob("*.md")):
        parsed = parse_document(path.read_bytes(), filename=path.name, mime_type="text/markdown")
        result[path.name] = chunk_sections(parsed.sections)
    return result


def test_demo_documents_parse_and_fit_the_default_chunk_size() -> None:
    chunks = demo_chunks()
    assert 5 <= len(chunks) <= 7
    for name, drafts in chunks.items():
        assert drafts, name
        assert all(c.token_count <= 350 for c in drafts), name


def test_eval_set_points_at_text_inside_exactly_one_chunk() -> None:
    chunks = demo_chunks()
    lines = EVAL_FILE.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) >= 70
    assert len({row["question"] for row in rows}) == len(rows)
    assert {row["expected_document"] for row in rows} == set(chunks)
    for number, row in enumerate(rows, start=1):
        assert set(row) == {"question", "expected_document", "expected_text"}, number
        expected = row["expected_text"]
        assert 5 <= len(expected) <= 60, number
        document = (DEMO_KB / row["expected_document"]).read_text(encoding="utf-8")
        assert expected in document, f"line {number}: not in the document"
        containing = [c.ordinal for c in chunks[row["expected_document"]] if expected in c.content]
        assert len(containing) == 1, f"line {number}: in chunks {containing}"
