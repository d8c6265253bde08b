"""Builds the re-ask-by-meaning model (`loop_semantic.py`):

    python -m ai_agents.rules.loop_semantic_build        # train on every set, write the weights
    python -m ai_agents.rules.loop_semantic_build --cv   # leave-one-set-out estimate, per set

Training rows: the cases of every `fixtures/escalation_*.jsonl` that the detector WITHOUT this
model leaves undecided and that the model consults (an earlier question answered by answers of
5+ words, the last answer asking nothing); label: `conversation_loop` or not. A class-balanced,
L2-regularised logistic regression (numpy, fixed-step gradient descent from zeros:
deterministic). Threshold: the lowest (0.50, 0.51, ...) at which the model adds NO false loop on
the training sets. `--cv` holds each set out in turn, trains and picks the threshold on the
others, and prints the loop precision and recall of the held-out set before / after.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ai_agents.rules import loop_semantic as ls
from ai_agents.rules.person_build import vectors

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOOP = "conversation_loop"
ITERATIONS = 3000
STEP = 0.5
L2 = 1e-2


@dataclass
class Row:
    group: str
    x: list[float] | None  # None: not consulted
    label: bool
    decided: bool  # the detector without this model already escalates
    expected_loop: bool
    decided_loop: bool
    message: str = ""


def rows() -> list[Row]:
    from ai_agents.services.escalation_eval import default_rules, evaluate, load_cases

    rules = default_rules()
    out: list[Row] = []
    for path in sorted(FIXTURES.glob("escalation_*.jsonl")):
        cases = load_cases(path)
        texts = [t for c in cases for t in (c.message, *c.user_texts)]
        found = vectors(texts)

        vector_of = functools.partial(_vector, found)

        for outcome in evaluate(cases, rules):
            case = outcome.case
            x = None
            if outcome.reason == "none" and ls.consulted(case.assistant_texts):
                x = ls.features(
                    case.message,
                    found[case.message].tolist(),
                    recent_user_texts=case.user_texts,
                    assistant_texts=case.assistant_texts,
                    vector_of=vector_of,
                )
            out.append(
                Row(
                    group=path.stem.removeprefix("escalation_"),
                    x=x,
                    label=case.reason == LOOP,
                    decided=outcome.reason != "none",
                    expected_loop=case.reason == LOOP,
                    decided_loop=outcome.reason == LOOP,
                    message=case.message,
                )
            )
    return out


def _vector(found: dict[str, np.ndarray], text: str) -> list[float] | None:
    v = found.get(text)
    return None if v is None else v.tolist()


def train(data: list[Row]) -> dict[str, object]:
    x = np.array([r.x for r in data if r.x is not None], dtype=np.float64)
    y = np.array([r.label for r in data if r.x is not None], dtype=np.float64)
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.c_[(x - mean) / scale, np.ones(len(x))]
    weight = np.where(y > 0, len(y) / (2 * max(y.sum(), 1)), len(y) / (2 * max((1 - y).sum(), 1)))
    w = np.zeros(z.shape[1])
    for _ in range(ITERATIONS):
        p = 1 / (1 + np.exp(-z @ w))
        w -= STEP * (z.T @ ((p - y) * weight) / len(y) + L2 * np.r_[w[:-1], 0])
    built = {
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "weights": w[:-1].tolist(),
        "bias": float(w[-1]),
        "threshold": 1.0,
    }
    built["threshold"] = _threshold(_model(built), data)
    return built


def _model(built: dict[str, Any]) -> ls.Model:
    return ls.Model(
        mean=tuple(built["mean"]),
        scale=tuple(built["scale"]),
        weights=tuple(built["weights"]),
        bias=float(built["bias"]),
        threshold=float(built["threshold"]),
    )


def _threshold(model: ls.Model, data: list[Row]) -> float:
    negatives = [model.probability(r.x) for r in data if r.x is not None and not r.label]
    for t in np.arange(0.50, 0.995, 0.01):
        if not any(p >= t for p in negatives):
            return round(float(t), 2)
    return 1.0


def counts(model: ls.Model | None, data: list[Row]) -> tuple[int, int, int]:
    """Loop tp, fp, fn of the detector plus `model` (None: without it)."""
    tp = fp = fn = 0
    for r in data:
        loop = r.decided_loop or (
            not r.decided
            and model is not None
            and r.x is not None
            and model.probability(r.x) >= model.threshold
        )
        tp += loop and r.expected_loop
        fp += loop and not r.expected_loop
        fn += not loop and r.expected_loop
    return tp, fp, fn


def _pr(tp: int, fp: int, fn: int) -> str:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return f"P {p:.3f} R {r:.3f} ({tp}/{fp}/{fn})"


def cross_validate(data: list[Row]) -> list[str]:
    lines = ["held-out set       threshold  loops before -> after (tp/fp/fn)"]
    for group in sorted({r.group for r in data}):
        held = [r for r in data if r.group == group]
        model = _model(train([r for r in data if r.group != group]))
        lines.append(
            f"{group:<18} {model.threshold:>9.2f}  "
            f"{_pr(*counts(None, held))} -> {_pr(*counts(model, held))}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ai_agents.rules.loop_semantic_build")
    parser.add_argument("--cv", action="store_true", help="leave-one-set-out estimate only")
    args = parser.parse_args(argv)
    data = rows()
    if args.cv:
        print("\n".join(cross_validate(data)))
        return 0
    built = train(data)
    ls.WEIGHTS.write_text(json.dumps(built, indent=1) + "\n")
    model = _model(built)
    print(f"threshold {model.threshold:.2f}, all sets {_pr(*counts(model, data))}")
    return 0


if __name__ == "__main__":
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
    django.setup()
    sys.exit(main())
