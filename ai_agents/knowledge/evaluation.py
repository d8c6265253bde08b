"""Retrieval evaluation: recall@1, recall@5 and MRR of a question set over a knowledge base.

A question is answered at rank r when the r-th returned chunk belongs to the expected document
(matched by original filename or title) and, if `expected_text` is given, contains it
(case-insensitive, whitespace collapsed). Without `expected_text`, any chunk of the expected
document counts. MRR uses the first such rank within the top `depth` (0 beyond it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ai_agents.models import Document, KnowledgeBase
from ai_agents.selectors.knowledge import Mode, SearchHit, knowledge_search

MODES: tuple[Mode, ...] = ("vector", "lexical", "hybrid")


@dataclass(frozen=True)
class Question:
    question: str
    expected_document: str
    expected_text: str | None


@dataclass
class Scores:
    mode: str
    ranks: list[int] = field(default_factory=list)  # 0 = not found

    def recall(self, k: int) -> float:
        return sum(1 for r in self.ranks if 0 < r <= k) / len(self.ranks) if self.ranks else 0.0

    @property
    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r) / len(self.ranks) if self.ranks else 0.0


def load_questions(path: Path) -> list[Question]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            questions.append(
                Question(row["question"], row["expected_document"], row.get("expected_text"))
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"línea {number}: {exc}") from None
    return questions


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def hit_rank(question: Question, hits: Iterable[SearchHit], names: dict[str, set[str]]) -> int:
    expected = question.expected_document.casefold()
    needle = _norm(question.expected_text) if question.expected_text else None
    for rank, hit in enumerate(hits, start=1):
        if expected not in names.get(str(hit.document_id), set()):
            continue
        if needle is None or needle in _norm(hit.content):
            return rank
    return 0


def evaluate(kb: KnowledgeBase, questions: list[Question], *, depth: int = 10) -> dict[str, Scores]:
    names = {
        str(pk): {(filename or "").casefold(), (title or "").casefold()}
        for pk, filename, title in Document.objects.for_tenant(kb.tenant_id)
        .filter(knowledge_base=kb)
        .values_list("pk", "original_filename", "title")
    }
    results: dict[str, Scores] = {mode: Scores(mode) for mode in MODES}
    for question in questions:
        for mode in MODES:
            hits = knowledge_search(
                tenant=kb.tenant,
                knowledge_base_ids=[kb.pk],
                query=question.question,
                k=depth,
                mode=mode,
            )
            results[mode].ranks.append(hit_rank(question, hits, names))
    return results
