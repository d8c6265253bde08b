"""WhatsApp customers writing in bursts to `make run`: one reply per burst, how soon after the
burst's last message.

    .venv/bin/python bench/bursts.py [--contacts 200] [--bursts 2] [--model-seconds 0.3]
                                     [--seed 18] [--smoke]

Issue 18's goal: 200 contacts each sending bursts of 1-4 messages at random gaps, the fake
model answering in 300 ms: replies sent = bursts, 0 duplicates, 0 unanswered, and the P95 from
a burst's last message to its reply under the agent's quiet window (2.5 s, the default) + the
model's 300 ms + 150 ms. `--smoke` is 3 contacts, one burst each (CI: the bench still works).

The stack is bench/concurrency.py's (a scratch database on the embedded PostgreSQL under
var/bench-concurrency, a valkey of its own, the fake Generative Language and Graph APIs in a
process of their own, `python -m erp.supervisor` on top with its production settings). The
load: every contact starts within `--spread` seconds (60), sends `--bursts` bursts of 1-4 messages
(gaps within a burst 0.2-1.5 s, under the quiet window), the next burst well after the last
one was due (quiet window + model + 3-4 s), each message one signed webhook POST. Measured: for
each burst, from the instant its last message was POSTed to the instant the fake Graph API
received its reply (a contact's replies matched to its bursts in order); replies against
bursts, duplicates (more replies than bursts), unanswered (fewer), and in the database the
customer messages stored and those left without an answer. Exit status 1 when a reply is
missing or duplicated or a message is left unanswered.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _harness import percentile, sigterm_as_interrupt  # noqa: E402
from _whatsapp import FIRST_WA_ID, NUMBER, headers  # noqa: E402
from concurrency import DATA_DIR, Services  # noqa: E402

from erp.testing.whatsapp_traffic import text_webhook  # noqa: E402

QUIET_S, LONGEST_S = 2.5, 8.0  # the agent's defaults (processing_config.burst_*_ms)
GOAL_MARGIN_S = 0.15
PHRASES = [
    "hola",
    "una pregunta",
    "¿tienen envío a Saltillo?",
    "y ¿cuánto tarda?",
    "busco la talla mediana",
    "¿aceptan tarjeta?",
    "gracias",
    "¿abren el domingo?",
]


def plan(args: argparse.Namespace) -> list[list[list[float]]]:
    """Per contact, per burst, the offsets (seconds from the start) of its messages."""
    rng = random.Random(args.seed)
    contacts = []
    for _ in range(args.contacts):
        at, bursts = rng.uniform(0, args.spread), []
        for _ in range(args.bursts):
            offsets = [at]
            for _ in range(rng.randint(1, 4) - 1):
                offsets.append(offsets[-1] + rng.uniform(0.2, 1.5))
            bursts.append(offsets)
            at = offsets[-1] + QUIET_S + args.model_seconds + rng.uniform(3.0, 4.0)
        contacts.append(bursts)
    return contacts


def send_all(
    base: str, contacts: list[list[list[float]]], *, prefix: str = "bursts", first: int = 0
) -> dict[str, Any]:
    """Each contact (numbered from `first`) in a thread of its own sends its bursts on time
    (message ids `wamid.<prefix>-<n>`). Returns when each burst's last message was POSTed
    (monotonic), per contact, and the responses by status."""
    import requests

    last_posted: list[list[float]] = [[] for _ in contacts]
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    start = time.monotonic() + 1.0
    counter = iter(range(10**9))

    def contact(n: int, bursts: list[list[float]]) -> None:
        session = requests.Session()
        wa_id = str(FIRST_WA_ID + first + n)
        for b, offsets in enumerate(bursts):
            for i, offset in enumerate(offsets):
                time.sleep(max(0.0, start + offset - time.monotonic()))
                with lock:
                    number = next(counter)
                text = f"{PHRASES[(n + b * 3 + i) % len(PHRASES)]} ({number})"
                body = text_webhook(
                    number=NUMBER, wa_id=wa_id, wamid=f"wamid.{prefix}-{number:07d}", text=text
                )
                posted = time.monotonic()
                try:
                    url = f"{base}/webhooks/whatsapp"
                    answer = session.post(url, data=body, headers=headers(body), timeout=60)
                    code = str(answer.status_code)
                except requests.RequestException as exc:
                    code = type(exc).__name__
                with lock:
                    statuses[code] = statuses.get(code, 0) + 1
            last_posted[n].append(posted)

    threads = [
        threading.Thread(target=contact, args=(n, bursts), daemon=True)
        for n, bursts in enumerate(contacts)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return {"last_posted": last_posted, "statuses": statuses}


def wait_replies(services: Services, expected: int, timeout: float, settle: float) -> Any:
    """The fakes' figures once `expected` replies arrived (or `timeout`), `settle` s later so a
    duplicate would be counted too."""
    deadline = time.monotonic() + timeout
    while len(services.stats()["sends"]) < expected and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(settle)
    return services.stats()


_COUNTS = """
SELECT count(*), count(*) FILTER (WHERE NOT (metadata ? 'result')) FROM ai_agents_message
WHERE role = 'user' AND channel_message_id LIKE 'wamid.bursts-%'
"""
# Per reply: from its burst's newest message stored to the reply stored, the turn's part, its
# steps, and how late the turn started after the burst was due (queueing, the re-check's timer).
_STEPS = """
SELECT extract(epoch FROM r.created_at - u.created_at), t.total, r.metadata->'timings_ms',
       extract(epoch FROM r.created_at - make_interval(secs => t.total)
               - least(u.created_at + %s * interval '1 ms', f.created_at + %s * interval '1 ms'))
FROM ai_agents_message r JOIN ai_agents_message u ON u.id = r.reply_to_id
JOIN ai_agents_message f ON f.id = coalesce((r.metadata->'burst'->>0)::uuid, u.id)
CROSS JOIN LATERAL (
  SELECT coalesce((r.metadata->'timings_ms'->>'total')::int, 0) / 1000.0 AS total) t
WHERE r.role = 'assistant' AND u.channel_message_id LIKE 'wamid.bursts-%%'
"""


def database_counts(services: Services) -> dict[str, Any]:
    """Customer messages stored and left unanswered; per reply, the seconds from the burst's
    newest message stored to the reply stored, and the turn's own (read, model, store)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(make_conninfo(services.admin_url, dbname=services.db_name)) as conn:
        row = conn.execute(_COUNTS).fetchone()
        steps = conn.execute(_STEPS, [QUIET_S * 1000, LONGEST_S * 1000]).fetchall()
    assert row is not None
    return {
        "stored": int(row[0]),
        "waiting": int(row[1]),
        "to_reply": sorted(float(s[0]) for s in steps),
        "turn": sorted(float(s[1]) for s in steps),
        "late": sorted(float(s[3]) for s in steps),
        "turn_steps": {
            key: statistics.median(int((s[2] or {}).get(key, 0)) for s in steps)
            for key in sorted({k for s in steps for k in (s[2] or {})})
        },
    }


def report(
    args: argparse.Namespace, contacts: list[list[list[float]]], run: dict[str, Any]
) -> bool:
    """Prints the figures; True when every burst got exactly one reply and nothing waits."""
    replies: dict[int, list[float]] = {}
    for at, to in sorted(run["stats"]["sends"]):
        replies.setdefault(int(to.lstrip("+")) - FIRST_WA_ID, []).append(at)
    bursts = sum(len(b) for b in contacts)
    messages = sum(len(offsets) for b in contacts for offsets in b)
    latencies, duplicates, unanswered = [], 0, 0
    for n, posted in enumerate(run["last_posted"]):
        got = replies.get(n, [])
        duplicates += max(0, len(got) - len(posted))
        unanswered += max(0, len(posted) - len(got))
        latencies += [reply - last for last, reply in zip(posted, got, strict=False)]
    latencies.sort()
    found = run["database"]
    stored, waiting = found["stored"], found["waiting"]
    print(
        f"\n{args.contacts} WhatsApp contacts, {bursts} bursts of 1-4 messages ({messages} "
        f"messages), model {args.model_seconds:g} s, quiet window {QUIET_S:g} s (at most "
        f"{LONGEST_S:g} s); webhook responses {run['statuses']}"
    )
    if latencies:
        print(
            f"  burst's last message -> reply: median {statistics.median(latencies):.3f} s  "
            f"P95 {percentile(latencies, 0.95):.3f} s  max {latencies[-1]:.3f} s"
        )
    for name, values in (
        ("stored -> reply stored", found["to_reply"]),
        ("turn (read, model, store)", found["turn"]),
        ("turn started after the burst was due", found["late"]),
    ):
        if values:
            print(
                f"  {name}: median {statistics.median(values):.3f} s  P95 "
                f"{percentile(values, 0.95):.3f} s  max {values[-1]:.3f} s"
            )
    print(f"  turn's steps, median ms: {found['turn_steps']}")
    print(
        f"  replies sent {len(run['stats']['sends'])} for {bursts} bursts | duplicates "
        f"{duplicates} | unanswered bursts {unanswered} | model calls "
        f"{run['stats']['model_calls']} | messages stored {stored}, left unanswered {waiting}"
    )
    if latencies and not args.smoke:
        goal = QUIET_S + args.model_seconds + GOAL_MARGIN_S
        met = percentile(latencies, 0.95) < goal
        print(f"  goal: P95 < {goal:.2f} s: {'met' if met else 'NOT met'}")
    return duplicates == 0 and unanswered == 0 and waiting == 0 and stored == messages


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contacts", type=int, default=200)
    parser.add_argument("--bursts", type=int, default=2, help="bursts per contact")
    parser.add_argument("--model-seconds", type=float, default=0.3)
    parser.add_argument("--spread", type=float, default=60.0, help="contacts start within it")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--smoke", action="store_true", help="3 contacts, one burst each")
    args = parser.parse_args()
    if args.smoke:
        args.contacts, args.bursts, args.spread = 3, 1, 0.5
    return args


def main() -> None:
    args = parse_args()
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    services = Services()
    ok = False
    with sigterm_as_interrupt():
        try:
            base = services.stack_start(args.model_seconds, slug="bench-bursts")
            # warm-up (another contact): the first answer of a process imports and connects
            send_all(base, [[[0.0]]], prefix="warm-up", first=args.contacts)
            wait_replies(services, 1, 60, settle=0)
            services.ask("reset")
            contacts = plan(args)
            run = send_all(base, contacts)
            bursts = sum(len(b) for b in contacts)
            run["stats"] = wait_replies(services, bursts, 60 + bursts * 0.2, settle=QUIET_S + 1)
            run["database"] = database_counts(services)
            ok = report(args, contacts, run)
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
        finally:
            services.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
