"""The WhatsApp webhook's acknowledgement, side by side with a bare Django view, in one run.

    .venv/bin/python bench/webhook_ack.py [--posts 1000] [--rate 35] [--per-customer 4]
                                          [--concurrency 16] [--smoke]

Two uvicorn processes (1 worker each, like `make run`) on the same scratch services as
bench/webhook_load.py (embedded PostgreSQL under var/bench-webhook/postgres, a scratch database
created, migrated and dropped; a valkey of its own; no Celery worker, so only the
acknowledgement is measured and the answers stay queued):

- product: `erp.asgi`, `POST /webhooks/whatsapp` (what Meta calls);
- bare: `bench/_bare_ack.py`, the same settings and middleware, a view doing the same
  signature check, JSON parsing and ONE INSERT into a scratch table.

Load: `--posts` signed POSTs to each, one message per POST (Meta's usual batch), each customer
writing `--per-customer` messages; an open loop at `--rate` POSTs/s to EACH (Meta's traffic
does not wait for our answers), the two streams interleaved so both see the same machine.
Reported per server: acknowledgement P50/P95/P99 (client clock, send to 200) and CPU of the
web process per POST (utime + stime of /proc/<pid>/stat across the load / POSTs). Goals
(issue #18): product CPU <= 4 ms per POST (set where the bare view took 2.6 ms: also printed
scaled to this machine, as a multiple of the bare view's CPU, <= 4 / 2.6 = 1.54x), product P95
<= 2x the bare view's. Then checks that every acknowledged message was stored once.
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _harness import assert_scratch, percentile, sigterm_as_interrupt  # noqa: E402
from _whatsapp import headers, webhook_body  # noqa: E402
from webhook_load import DATA_DIR, Services, start_web  # noqa: E402

TARGETS = ("product", "bare")
PATHS = {"product": "/webhooks/whatsapp", "bare": "/webhooks/bare"}
# The bare view's scratch table (bench/_bare_ack.py inserts into it).
CREATE_TABLE = (
    "CREATE TABLE bench_bare_ack (id bigserial PRIMARY KEY, wamid text UNIQUE NOT NULL,"
    " body jsonb NOT NULL)"
)
GOAL_CPU_MS = 4.0
GOAL_P95_RATIO = 2.0
# The issue measured the bare view at 2.6 ms of CPU when it set the 4 ms goal: on a slower or
# faster machine the goal scales with the bare view measured in the same run.
ISSUE_BARE_CPU_MS = 2.6


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (its own threads; uvicorn with 1 worker does not fork)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plan_of(args: argparse.Namespace, prefix: str) -> list[tuple[str, bytes]]:
    """(target, body) in sending order: the two streams interleaved, distinct messages."""
    plan = []
    for n in range(args.posts):
        for target in TARGETS:
            body = webhook_body(n=n, customer=n // args.per_customer, prefix=f"{prefix}-{target}")
            plan.append((target, body))
    return plan


def run(bases: dict[str, str], plan: list[tuple[str, bytes]], args: argparse.Namespace) -> Any:
    """Sends `plan` open loop (`args.rate` per target, so twice that in all) from
    `args.concurrency` threads. Returns {target: [ack ms]} and {target: {status: count}}."""
    import requests

    work: queue.Queue[tuple[int, str, bytes]] = queue.Queue()
    for i, (target, body) in enumerate(plan):
        work.put((i, target, body))
    acks: dict[str, list[float]] = {t: [] for t in TARGETS}
    statuses: dict[str, dict[str, int]] = {t: {} for t in TARGETS}
    lock = threading.Lock()
    ready = threading.Barrier(args.concurrency + 1)
    started = [0.0]
    interval = 1 / (args.rate * len(TARGETS))

    def client() -> None:
        session = requests.Session()
        for base in bases.values():
            session.get(f"{base}/healthz", timeout=10)  # the kept-alive connections
        ready.wait()
        while True:
            try:
                i, target, body = work.get_nowait()
            except queue.Empty:
                return
            signed = headers(body)
            wait = started[0] + i * interval - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            t0 = time.perf_counter()
            try:
                url = bases[target] + PATHS[target]
                code = str(session.post(url, data=body, headers=signed, timeout=30).status_code)
            except requests.RequestException as exc:
                code = type(exc).__name__
            took = (time.perf_counter() - t0) * 1000
            with lock:
                acks[target].append(took)
                statuses[target][code] = statuses[target].get(code, 0) + 1

    threads = [threading.Thread(target=client, daemon=True) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    ready.wait()
    started[0] = time.perf_counter()
    for thread in threads:
        thread.join()
    return acks, statuses


def measure(bases: dict[str, str], pids: dict[str, int], args: argparse.Namespace) -> Any:
    """Warm-up, then the load; {target: (acks, statuses, cpu seconds)} and the wall time."""
    warm = argparse.Namespace(**{**vars(args), "posts": args.warmup})
    run(bases, plan_of(warm, "warmup"), warm)
    cpu0 = {t: cpu_seconds(pids[t]) for t in TARGETS}
    t0 = time.perf_counter()
    acks, statuses = run(bases, plan_of(args, "load"), args)
    seconds = time.perf_counter() - t0
    cpu = {t: cpu_seconds(pids[t]) - cpu0[t] for t in TARGETS}
    return {t: (acks[t], statuses[t], cpu[t]) for t in TARGETS}, seconds


def report(results: dict[str, Any], seconds: float, args: argparse.Namespace) -> dict[str, float]:
    figures: dict[str, float] = {}
    print(
        f"\n{args.posts} POSTs to each, open loop at {args.rate:g}/s each "
        f"({args.rate * 2:g}/s in all), {args.concurrency} client threads, {seconds:.1f} s; "
        f"{os.cpu_count()} cores, load average now {os.getloadavg()[0]:.1f}"
    )
    for target in TARGETS:
        acks, statuses, cpu = results[target]
        p50, p95 = statistics.median(acks), percentile(acks, 0.95)
        cpu_ms = cpu * 1000 / len(acks)
        figures.update({f"{target}_p50": p50, f"{target}_p95": p95, f"{target}_cpu": cpu_ms})
        print(
            f"  {target:8s} ack P50 {p50:5.1f} ms  P95 {p95:5.1f} ms  P99 "
            f"{percentile(acks, 0.99):5.1f} ms  max {max(acks):6.1f} ms | CPU {cpu_ms:.2f} ms "
            f"per POST | responses {statuses}"
        )
    ratio = figures["product_p95"] / figures["bare_p95"]
    cpu_ratio = figures["product_cpu"] / figures["bare_cpu"]
    scaled = GOAL_CPU_MS / ISSUE_BARE_CPU_MS
    print(
        f"  goals: product CPU {figures['product_cpu']:.2f} ms per POST (<= {GOAL_CPU_MS:g}: "
        f"{'met' if figures['product_cpu'] <= GOAL_CPU_MS else 'NOT met'}; "
        f"{cpu_ratio:.2f}x the bare view's, the goal scaled to this machine <= {scaled:.2f}x: "
        f"{'met' if cpu_ratio <= scaled else 'NOT met'}); product P95 "
        f"{ratio:.2f}x the bare view's (<= {GOAL_P95_RATIO:g}: "
        f"{'met' if ratio <= GOAL_P95_RATIO else 'NOT met'})"
    )
    return figures


def stored_once(tenant: Any, expected: int) -> None:
    from django.db.models import Count

    from ai_agents.models import Message
    from erp.tenancy.scoping import tenant_scope

    with tenant_scope(tenant):
        found = Message.objects.filter(
            role="user", channel_message_id__startswith="wamid.load-product-"
        )
        rows = found.count()
        repeated = (
            found.values("channel_message_id").annotate(n=Count("id")).filter(n__gt=1).count()
        )
    ok = rows == expected and repeated == 0
    print(
        f"  product: {rows} inbound rows for {expected} acknowledged messages, {repeated} "
        f"stored twice: {'every message stored once' if ok else 'NOT stored once'}"
    )


def setup(services: Services) -> tuple[Any, dict[str, str], dict[str, int]]:
    env = services.start()
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "erp.settings"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    assert_scratch()
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(CREATE_TABLE)
    from _whatsapp import fixture

    tenant = fixture(slug="bench-ack")
    bases, pids = {}, {}
    for target, app in (("product", "erp.asgi:application"), ("bare", "_bare_ack:application")):
        bases[target], web = start_web(services, env, app=app, log_name=f"uvicorn-{target}.log")
        pids[target] = web.pid
    return tenant, bases, pids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--posts", type=int, default=1000, help="POSTs to each server")
    parser.add_argument("--rate", type=float, default=35, help="POSTs/s to each server")
    parser.add_argument("--per-customer", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=16, help="client threads")
    parser.add_argument("--warmup", type=int, default=50, help="POSTs to each, not measured")
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.posts, args.warmup, args.rate, args.concurrency = 10, 3, 20, 2

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    services = Services()
    with sigterm_as_interrupt():
        try:
            tenant, bases, pids = setup(services)
            results, seconds = measure(bases, pids, args)
            report(results, seconds, args)
            acked = results["product"][1].get("200", 0)
            stored_once(tenant, acked)
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
        finally:
            services.stop()


if __name__ == "__main__":
    main()
