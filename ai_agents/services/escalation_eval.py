"""`manage.py escalation_eval FILE.jsonl [--agent ID]`: the escalation decision measured on a
labelled set, with no model configured (the rules, the learned layer and loop detection).

Each line: `{"message", "history": [{"role", "content"}], "should_escalate": bool, "reason"}`
(`reason`: the expected one, e.g. "user_request", "conversation_loop", "none"). The triggers
are the agent's (`--agent`) or the defaults; the intent is the keyword intent, as the engine
finds it before any model call. `report` prints precision and recall per reason, the confusion
table (expected reason x decided reason) and, last, `accuracy A (n/N) precision P recall R`
for the escalate / do not escalate decision.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ai_agents.config import escalation_defaults, intent_defaults
from ai_agents.conversations.context import Rules, keyword_intent, rules_for
from ai_agents.rules.escalation import evaluate_escalation
from ai_agents.rules.loop_semantic import VectorOf
from ai_agents.rules.person_request import PersonDecision

NONE = "none"


@dataclass(frozen=True)
class Case:
    message: str
    user_texts: tuple[str, ...]
    assistant_texts: tuple[str, ...]
    should_escalate: bool
    reason: str


@dataclass(frozen=True)
class Outcome:
    case: Case
    reason: str  # decided, or "none"
    layer: str
    detail: str
    seconds: float


def _case(line: str, number: int) -> Case:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"línea {number}: JSON no válido ({exc.msg})") from None
    if not isinstance(row, dict) or not isinstance(row.get("message"), str):
        raise ValueError(f"línea {number}: falta «message» (texto)")
    if not isinstance(row.get("should_escalate"), bool):
        raise ValueError(f"línea {number}: «should_escalate» debe ser true o false")
    history = row.get("history") or []
    if not isinstance(history, list) or not all(
        isinstance(h, dict) and isinstance(h.get("content"), str) for h in history
    ):
        raise ValueError(f"línea {number}: «history» debe ser una lista de {{role, content}}")
    reason = str(row.get("reason") or ("escalate" if row["should_escalate"] else NONE))
    return Case(
        message=row["message"],
        user_texts=tuple(h["content"] for h in history if h.get("role") == "user"),
        assistant_texts=tuple(h["content"] for h in history if h.get("role") == "assistant"),
        should_escalate=row["should_escalate"],
        reason=reason if row["should_escalate"] else NONE,
    )


def load_cases(path: Path) -> list[Case]:
    """The cases of a JSONL file; ValueError naming the first bad line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [_case(line, n) for n, line in enumerate(lines, start=1) if line.strip()]


def default_rules() -> Rules:
    """The rules of an agent with the default triggers and intents."""
    return rules_for(
        SimpleNamespace(
            escalation_triggers=escalation_defaults(), intent_detection=intent_defaults()
        )
    )


def evaluate(
    cases: Sequence[Case],
    rules: Rules,
    *,
    detect: Callable[[str], PersonDecision] | None = None,
    loop_vectors: VectorOf | None = None,
) -> list[Outcome]:
    """The decision on every case, timed. `loop_vectors`: the query vectors of the re-ask by
    meaning (`loop_semantic`; None: not checked)."""
    outcomes = []
    for case in cases:
        started = time.perf_counter()
        found = keyword_intent(case.message, rules)
        decision = evaluate_escalation(
            rules.triggers,
            text=case.message,
            sentiment=None,
            intent=found.intent if found else None,
            confidence=None,
            recent_user_texts=list(case.user_texts),
            assistant_texts=case.assistant_texts,
            model_requested=False,
            model_reason=None,
            detect=detect,
            loop_vectors=loop_vectors,
        )
        seconds = time.perf_counter() - started
        outcomes.append(
            Outcome(
                case=case,
                reason=decision.reason if decision else NONE,
                layer=decision.layer if decision else "",
                detail=str(decision.detail) if decision else "",
                seconds=seconds,
            )
        )
    return outcomes


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """accuracy, precision and recall of the escalate decision, with the counts."""
    tp = sum(o.case.should_escalate and o.reason != NONE for o in outcomes)
    fp = sum(not o.case.should_escalate and o.reason != NONE for o in outcomes)
    fn = sum(o.case.should_escalate and o.reason == NONE for o in outcomes)
    correct = sum(o.case.should_escalate == (o.reason != NONE) for o in outcomes)
    return {
        "accuracy": _ratio(correct, len(outcomes)),
        "correct": correct,
        "total": len(outcomes),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
    }


def per_reason(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Precision and recall of each expected or decided reason (other than none)."""
    reasons = sorted({o.case.reason for o in outcomes} | {o.reason for o in outcomes} - {NONE})
    out = {}
    for reason in reasons:
        tp = sum(o.case.reason == reason and o.reason == reason for o in outcomes)
        decided = sum(o.reason == reason for o in outcomes)
        expected = sum(o.case.reason == reason for o in outcomes)
        out[reason] = {
            "precision": _ratio(tp, decided),
            "recall": _ratio(tp, expected),
            "support": expected,
        }
    return out


def report(outcomes: Sequence[Outcome]) -> list[str]:
    """The printed report; the last line is `accuracy A (n/N) precision P recall R`."""
    lines = ["reason                 precision  recall  support"]
    for reason, m in per_reason(outcomes).items():
        lines.append(
            f"{reason:<22} {m['precision']:>9.3f} {m['recall']:>7.3f} {int(m['support']):>8}"
        )
    table = Counter((o.case.reason, o.reason) for o in outcomes)
    expected = sorted({o.case.reason for o in outcomes})
    decided = sorted({o.reason for o in outcomes} | {NONE})
    lines += ["", "confusion (rows: expected, columns: decided)"]
    lines.append(" " * 22 + "".join(f"{d[:18]:>19}" for d in decided))
    for reason in expected:
        lines.append(f"{reason[:22]:<22}" + "".join(f"{table[(reason, d)]:>19}" for d in decided))
    times = sorted(o.seconds * 1000 for o in outcomes) or [0.0]
    layers = Counter(o.layer or "-" for o in outcomes)
    lines += [
        "",
        f"decision time: mean {sum(times) / len(times):.2f} ms, "
        f"p50 {times[len(times) // 2]:.2f} ms, p95 {times[int(len(times) * 0.95) - 1]:.2f} ms",
        "layers: " + ", ".join(f"{k} {v}" for k, v in sorted(layers.items())),
    ]
    s = summary(outcomes)
    lines.append(
        f"accuracy {s['accuracy']:.3f} ({s['correct']}/{s['total']}) "
        f"precision {s['precision']:.3f} recall {s['recall']:.3f}"
    )
    return lines
