"""When retrieval is confident enough to quote a passage without a model (the offline answer).

The search's `score` is a fused RANK (the first hit always scores high, whatever the question),
so it cannot tell a covered question from an unrelated one. The cosine similarity of the query
and the best chunk can: each embedding model has its own scale (multilingual-e5 puts almost
everything above 0.7), hence one floor per embedding space, calibrated with
`manage.py kb_eval fixtures/kb_eval_demo.jsonl --offtopic fixtures/kb_offtopic_demo.jsonl`
(the curve: share of covered questions still answered, share of off-topic ones refused).
A space not in the table gets `DEFAULT_FLOOR`: conservative (refuses more than it should)
until it is measured. Real models get every passage: they judge relevance themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

from ai_agents.knowledge.spaces import LOCAL_MODEL
from ai_agents.selectors.knowledge import SearchHit

# space (or model name, for "<model>@<dims>" spaces) -> the lowest cosine similarity quoted.
FLOORS: dict[str, float] = {
    LOCAL_MODEL: 0.85,
}
DEFAULT_FLOOR = 0.80


def floor_for(space: str) -> float:
    """The calibrated floor of an embedding space, by space then by model name."""
    if space in FLOORS:
        return FLOORS[space]
    return FLOORS.get(space.split("@", 1)[0], DEFAULT_FLOOR)


def best_similarity(hits: Sequence[SearchHit]) -> tuple[float, str] | None:
    """The highest cosine similarity among `hits` and its space (None: no vector match)."""
    scored = [(h.similarity, h.space) for h in hits if h.similarity is not None]
    return max(scored) if scored else None


def confident(hits: Sequence[SearchHit]) -> bool:
    """True when the best vector match reaches its space's floor. Hits found by full text
    alone (no vector: the embedding provider failed) are never confident without a model."""
    best = best_similarity(hits)
    return best is not None and best[0] >= floor_for(best[1])
