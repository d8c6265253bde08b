"""The offline answer's floor calibration (`kb_eval --offtopic`): for covered questions and
off-topic ones, the best cosine similarity of the hybrid search, and per candidate floor the
share of covered questions still answered (and answered with the right passage first) and
the share of off-topic questions refused."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ai_agents.knowledge.confidence import best_similarity
from ai_agents.knowledge.evaluation import Question, hit_rank
from ai_agents.models import Document, KnowledgeBase
from ai_agents.selectors.knowledge import SearchHit, knowledge_search

CANDIDATE_FLOORS = tuple(round(0.78 + 0.01 * i, 2) for i in range(13))  # 0.78 .. 0.90


@dataclass(frozen=True)
class FloorRow:
    floor: float
    answered: float  # covered questions whose best similarity reaches the floor
    answered_right: float  # ... and whose first passage is the expected one
    refused: float  # off-topic questions below the floor


def load_offtopic(path: Path) -> list[str]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(str(json.loads(line)["question"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"línea {number}: {exc}") from None
    return questions


def _best(kb: KnowledgeBase, text: str) -> tuple[float, list[SearchHit]]:
    hits = knowledge_search(tenant=kb.tenant, knowledge_base_ids=[kb.pk], query=text, k=5)
    best = best_similarity(hits)
    return (best[0] if best else 0.0), hits


def floor_curve(
    kb: KnowledgeBase, covered: list[Question], offtopic: list[str]
) -> tuple[list[FloorRow], str]:
    """The curve over `CANDIDATE_FLOORS` and the knowledge base's embedding space."""
    names = {
        str(pk): {(filename or "").casefold(), (title or "").casefold()}
        for pk, filename, title in Document.objects.for_tenant(kb.tenant_id)
        .filter(knowledge_base=kb)
        .values_list("pk", "original_filename", "title")
    }
    on: list[tuple[float, bool]] = []
    for question in covered:
        similarity, hits = _best(kb, question.question)
        on.append((similarity, hit_rank(question, hits[:1], names) == 1))
    off = [_best(kb, text)[0] for text in offtopic]
    rows = [
        FloorRow(
            floor=floor,
            answered=sum(s >= floor for s, _ in on) / max(len(on), 1),
            answered_right=sum(s >= floor and right for s, right in on) / max(len(on), 1),
            refused=sum(s < floor for s in off) / max(len(off), 1),
        )
        for floor in CANDIDATE_FLOORS
    ]
    return rows, kb.embedding_space
