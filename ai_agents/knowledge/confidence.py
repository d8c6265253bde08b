"""When retrieval is confident enough to quote a passage without a model (the offline answer).

The search's `score` is a fused RANK (the first hit always scores high, whatever the question),
so it cannot tell a covered question from an unrelated one. The cosine similarity of the query
and the best chunk can, on each embedding model's own scale (multilingual-e5 puts almost
everything above 0.7): one floor per embedding space. Confident when the best similarity
reaches the floor, or comes within `LEXICAL_MARGIN` of it while the best passages also name at
least `LEXICAL_SHARE` of the question's content words ("¿cuánto cuesta una concha?" and a
passage listing "Concha"; an off-topic "kilo de tortillas" names nothing the documents do).

Calibrated with `manage.py kb_eval fixtures/kb_eval_demo.jsonl --offtopic
fixtures/kb_offtopic_demo.jsonl` (the curve: share of covered questions still answered, share
of off-topic ones refused; figures in the README). A space not in the table gets
`DEFAULT_FLOOR`: conservative (refuses more than it should) until it is measured. Real models
get every passage: they judge relevance themselves.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ai_agents.knowledge.spaces import LOCAL_MODEL
from ai_agents.selectors.knowledge import SearchHit
from erp.llm.language import ENGLISH, SPANISH

# space (or model name, for "<model>@<dims>" spaces) -> the lowest cosine similarity quoted.
FLOORS: dict[str, float] = {
    LOCAL_MODEL: 0.86,
}
DEFAULT_FLOOR = 0.86
LEXICAL_MARGIN = 0.05
LEXICAL_SHARE = 2 / 3
LEXICAL_PASSAGES = 3  # the best passages whose words count
PREFIX = 5  # "bolillos" finds "bolillo", "cumpleaños" finds "cumple..."


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Words that say nothing about the topic: function words and the question's frame.
_FRAME = (
    SPANISH
    | ENGLISH
    | _set(
        """q k que cuanto cuanta cuesta cuestan precio precios hay puedo pueden podria tienen
    tiene tienes cual cuales donde cuando como does much many price cost costs"""
    )
)
_WORD = re.compile(r"[a-z0-9]+")


def floor_for(space: str) -> float:
    """The calibrated floor of an embedding space, by space then by model name."""
    if space in FLOORS:
        return FLOORS[space]
    return FLOORS.get(space.split("@", 1)[0], DEFAULT_FLOOR)


def best_similarity(hits: Sequence[SearchHit]) -> tuple[float, str] | None:
    """The highest cosine similarity among `hits` and its space (None: no vector match)."""
    scored = [(h.similarity, h.space) for h in hits if h.similarity is not None]
    return max(scored) if scored else None


def _words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", text.casefold())
    return _WORD.findall("".join(c for c in plain if not unicodedata.combining(c)))


def named_share(query: str, hits: Sequence[SearchHit]) -> float:
    """The share of the question's content words (by their first `PREFIX` letters) that the
    best passages contain; 0 when the question has none."""
    wanted = {w[:PREFIX] for w in _words(query) if len(w) >= 3 and w not in _FRAME}
    if not wanted:
        return 0.0
    text = " ".join(h.content for h in hits[:LEXICAL_PASSAGES])
    present = {w[:PREFIX] for w in _words(text)}
    return len(wanted & present) / len(wanted)


def confident(hits: Sequence[SearchHit], query: str = "", *, floor: float | None = None) -> bool:
    """True when the best vector match reaches its space's floor (or `floor`), or comes
    within `LEXICAL_MARGIN` of it and the passages name the question's words. Hits found by
    full text alone (the embedding provider failed) are never confident without a model."""
    best = best_similarity(hits)
    if best is None:
        return False
    similarity, space = best
    needed = floor_for(space) if floor is None else floor
    if similarity >= needed:
        return True
    return similarity >= needed - LEXICAL_MARGIN and named_share(query, hits) >= LEXICAL_SHARE
