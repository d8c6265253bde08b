"""The offline answer's floor calibration (`kb_eval --offtopic`): for covered questions and
off-topic ones, the best cosine similarity of the hybrid search, and per candidate floor the
share of covered questions still answered (and answered with the right passage first) and
the share of off-topic questions refused, by the rule the offline answer uses
(ai_agents/knowledge/confidence.py) with each candidate floor."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ai_agents.knowledge.confidence import confident
from ai_agents.knowledge.evaluation import Question, hit_rank
from ai_agents.models import Document, KnowledgeBase
from ai_agents.selectors.knowledge import SearchHit, knowledge_search

CANDIDATE_FLOORS = tuple(round(0.78 + 0.01 * i, 2) for i in range(13))  # 0.78 .. 0.90


@dataclass(frozen=True)
class FloorRow:
    floor: float
    answered: float  # covered questions retrieval is confident about
    answered_right: float  # ... and whose first passage is the expected one
    refused: float  # off-topic questions not confident


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


def _search(kb: KnowledgeBase, text: str) -> list[SearchHit]:
    return knowledge_search(tenant=kb.tenant, knowledge_base_ids=[kb.pk], query=text, k=5)


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
    on = [(q.question, _search(kb, q.question), q) for q in covered]
    off = [(text, _search(kb, text)) for text in offtopic]
    rows = []
    for floor in CANDIDATE_FLOORS:
        answered = [(confident(hits, text, floor=floor), q, hits) for text, hits, q in on]
        rows.append(
            FloorRow(
                floor=floor,
                answered=sum(ok for ok, _, _ in answered) / max(len(on), 1),
                answered_right=sum(
                    ok and hit_rank(q, hits[:1], names) == 1 for ok, q, hits in answered
                )
                / max(len(on), 1),
                refused=sum(not confident(hits, text, floor=floor) for text, hits in off)
                / max(len(off), 1),
            )
        )
    return rows, kb.embedding_space
