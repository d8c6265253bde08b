"""WhatsApp webhook under load: acknowledgement latency, and every message stored once and
answered once.

    .venv/bin/python bench/webhook_load.py [--posts 2000] [--concurrency 50] [--duplicates 100]
                                           [--rate 0] [--per-customer 2] [--workers 2]
                                           [--profile 300] [--smoke]

Services (never the dev data): the embedded PostgreSQL under var/bench-webhook/postgres with
a scratch database `bench_webhook_<pid>_<random>` (created, migrated, dropped at the end;
`BENCH_POSTGRES_URL` names another server to create it on), a valkey server in
a temporary directory, and in one child process the fake Generative Language API (answers at
once) and the fake Graph API (`erp.testing.fake_graph`, counts the replies it receives). Then,
uvicorn (1 worker, like `make run`) serving erp.asgi and a Celery worker (`-Q realtime`,
Celery's default process pool, `--workers` processes; `make run` and docker-compose run the
real-time queue on the threads pool), both with the production connection pool.

Load: `--posts` signed POSTs to /webhooks/whatsapp from `--concurrency` client threads, one
message per POST (Meta's usual batch), `--per-customer` messages per customer (so some wait
while their conversation's turn is held by another answer); `--duplicates` of the POSTs resend
the exact bytes of an earlier one (Meta's redelivery, sometimes while the first is still in
flight).
`--rate 0` is a closed loop (each client posts as soon as its previous POST is acknowledged);
`--rate N` spreads the POSTs over time at N per second in all (an open loop, like Meta's
traffic). Acknowledgement = the client's time from sending the POST to the 200.

Then it waits until the fake Graph API received a reply for every message (or
`--drain-timeout`), and counts: inbound rows, replies per inbound message, sends received.
`--profile N`: N more POSTs in this process through Django's test client, timing SQL and the
Celery enqueue inside the webhook (what the acknowledgement is made of).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _harness import Scratch, assert_scratch, percentile, sigterm_as_interrupt  # noqa: E402
from _whatsapp import fakes_env, fixture, headers, webhook_body  # noqa: E402

from erp.testing.whatsapp_traffic import answer_next  # noqa: E402

BENCH_DB = "bench_webhook"
DATA_DIR = ROOT / "var" / "bench-webhook"


def _cpu(proc: Any) -> float:
    """CPU seconds of a child process and its children (prefork pool)."""
    import psutil

    if proc is None:
        return 0.0
    total = 0.0
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(proc.pid)
        for p in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = p.cpu_times()
                total += times.user + times.system
    return total


# --- services ------------------------------------------------------------------------------


def _serve_fakes(conn: Any) -> None:
    """Fake model and fake Graph API in their own process (their threads never compete for
    the client's GIL). Answers "stats" with the Graph counts until told "stop"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from erp.testing.fake_google import FakeGoogle
    from erp.testing.fake_graph import FakeGraph

    google = FakeGoogle().start()
    # Each conversation's answers vary: a customer's second message answered like the first
    # would be a loop, escalated, and its reply not sent (then the bench measured that path).
    google.responder = lambda body: google.reply_json(
        answer_next(body), input_tokens=300, output_tokens=20
    )
    graph = FakeGraph().start()
    conn.send({"google": google.url, "graph": graph.url})
    with contextlib.suppress(EOFError, KeyboardInterrupt):
        while (command := conn.recv()) != "stop":
            if command == "stats":
                sends = graph.sent
                conn.send(
                    {
                        "sends": len(sends),
                        "read_marks": len(graph.read_marks),
                        "model_calls": len(google.generate_requests),
                    }
                )
    google.stop()
    graph.stop()


class Services(Scratch):
    """The scratch services, the fake model and Graph API, and the processes the bench
    spawns (stopped first, in reverse)."""

    def __init__(self) -> None:
        super().__init__(data_dir=DATA_DIR, db_name=BENCH_DB)
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self) -> dict[str, str]:  # type: ignore[override]
        env, urls = super().start(_serve_fakes)
        return {**env, **fakes_env(urls)}

    def stats(self) -> dict[str, int]:
        return dict(self.ask("stats"))

    def spawn(self, argv: list[str], env: dict[str, str], log_name: str) -> Any:
        log = open(DATA_DIR / log_name, "wb")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.children.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.children):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.children:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # prefork children
        super().stop()


def start_worker(services: Services, env: dict[str, str], workers: int) -> Any:
    return services.spawn(
        [sys.executable, "-m", "celery", "-A", "erp", "worker", "-Q", "realtime", "-c",
         str(workers), "-l", "WARNING", "--without-gossip", "--without-mingle",
         "-n", "bench-webhook@%h"],
        env,
        "worker.log",
    )  # fmt: skip


def start_web(
    services: Services,
    env: dict[str, str],
    workers: int = 1,
    *,
    app: str = "erp.asgi:application",
    log_name: str = "uvicorn.log",
) -> tuple[str, Any]:
    """uvicorn serving `app` (a module of the project, or of `bench/`) on a free port, once it
    answers /healthz: (its base URL, its process)."""
    import requests

    from erp import embedded

    port = embedded.free_port()
    py = sys.executable
    app_dir = ["--app-dir", str(ROOT / "bench")] if app.startswith("_") else []
    web = services.spawn(
        [py, "-m", "uvicorn", app, *app_dir, "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers), "--lifespan", "off", "--no-access-log",
         "--log-level", "warning"],
        {**env, "PYTHONPATH": str(ROOT)},
        log_name,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if web.poll() is not None:
            raise RuntimeError(f"uvicorn exited; see {DATA_DIR / log_name}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{base}/healthz", timeout=2).status_code == 200:
                return base, web
        time.sleep(0.2)
    raise RuntimeError("uvicorn did not answer /healthz within 60 s")


def body_for(n: int, per_customer: int, prefix: str = "load") -> bytes:
    return webhook_body(n=n, customer=n // per_customer, prefix=prefix)


# --- load ------------------------------------------------------------------------------------


def load(base: str, args: argparse.Namespace) -> tuple[list[float], dict[str, int], float, int]:
    """Returns the acknowledgement times (ms), responses by status, seconds, and how many
    distinct messages were acknowledged with a 200 (what must be stored and answered)."""
    import requests

    unique = args.posts - args.duplicates
    rng = random.Random(7)
    plan = [body_for(n, args.per_customer) for n in range(unique)]
    # Each duplicate resends an earlier message, placed after it (often still in flight).
    for _ in range(args.duplicates):
        original = rng.randrange(unique)
        plan.insert(rng.randrange(original + 1, len(plan) + 1), plan[original])
    work: queue.Queue[tuple[int, bytes]] = queue.Queue()
    for i, body in enumerate(plan):
        work.put((i, body))
    url = f"{base}/webhooks/whatsapp"
    acks: list[float] = []
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    retries = [0]
    acked: set[bytes] = set()
    ready = threading.Barrier(args.concurrency + 1)
    started_at = [0.0]

    def client() -> None:
        session = requests.Session()
        session.get(f"{base}/healthz", timeout=10)  # warm-up: the TCP connection
        ready.wait()
        while True:
            try:
                i, body = work.get_nowait()
            except queue.Empty:
                return
            if args.rate:
                wait = started_at[0] + i / args.rate - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            signed = headers(body)  # before the clock starts, as Meta signs before it sends
            for attempt in (1, 2):
                t0 = time.perf_counter()
                try:
                    code = str(session.post(url, data=body, headers=signed, timeout=60).status_code)
                except requests.ConnectionError as exc:
                    # Usually a kept-alive connection the server closed as we reused it;
                    # Meta would redeliver, so the bench does too (once, new connection).
                    code = type(exc).__name__
                    if attempt == 1:
                        with lock:
                            retries[0] += 1
                        session = requests.Session()
                        continue
                except requests.RequestException as exc:
                    code = type(exc).__name__
                break
            took = time.perf_counter() - t0
            with lock:
                acks.append(took * 1000)
                statuses[code] = statuses.get(code, 0) + 1
                if code == "200":
                    acked.add(body)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    ready.wait()
    started_at[0] = time.perf_counter()
    for t in threads:
        t.join()
    if retries[0]:
        statuses["client_retries_after_connection_error"] = retries[0]
    return acks, statuses, time.perf_counter() - started_at[0], len(acked)


def drain(services: Services, expected: int, timeout: float) -> tuple[dict[str, int], float]:
    started = progress_at = time.perf_counter()
    stats = services.stats()
    while stats["sends"] < expected and time.perf_counter() - started < timeout:
        time.sleep(0.5)
        previous, stats = stats, services.stats()
        if stats["sends"] != previous["sends"]:
            progress_at = time.perf_counter()
        elif time.perf_counter() - progress_at > 60:
            break  # stuck: report what arrived
    time.sleep(2)  # anything extra (a duplicate reply) would arrive now
    return services.stats(), time.perf_counter() - started


def counts(tenant: Any) -> dict[str, int]:
    from django.db.models import Count

    from ai_agents.models import Conversation, Delivery, Message
    from erp.tenancy.scoping import tenant_scope

    with tenant_scope(tenant):
        users = Message.objects.filter(role="user")
        replies = Message.objects.filter(role="assistant")
        per_inbound = replies.values("reply_to").annotate(n=Count("id")).order_by("-n").first() or {
            "n": 0
        }
        return {
            "inbound_rows": users.count(),
            "distinct_ids": users.values("channel_message_id").distinct().count(),
            "unanswered": users.exclude(metadata__has_key="result").count(),
            "replies": replies.count(),
            "max_replies_per_inbound": per_inbound["n"],
            "deliveries_sent": Delivery.objects.filter(status="sent").count(),
            "deliveries_failed": Delivery.objects.filter(status="failed").count(),
            # Why a stored reply was not sent, when one was not (the bench's own rot shows here).
            "replies_by_status": dict(
                replies.values_list("delivery_status").annotate(n=Count("id")).order_by()
            ),
            "escalated_by_reason": dict(
                Conversation.objects.exclude(escalation_reason="")
                .values_list("escalation_reason")
                .annotate(n=Count("id"))
                .order_by()
            ),
        }


# --- profile (in process) --------------------------------------------------------------------


def profile(n: int, per_customer: int, cprofile: bool = False) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from ai_agents.conversations import inbound
    from ai_agents.services import inbox_events

    # The answers' tasks (their messages built) and the POST's one Redis round trip (events
    # and tasks sent).
    enqueue_s: list[float] = []

    def timed(original: Any) -> Any:
        def run(*args: Any) -> None:
            t0 = time.perf_counter()
            try:
                original(*args)
            finally:
                enqueue_s.append(time.perf_counter() - t0)

        return run

    inbound._enqueue_each = timed(inbound._enqueue_each)  # type: ignore[method-assign]
    inbox_events._trip = timed(inbox_events._trip)  # type: ignore[method-assign]
    client = Client()
    rows = []
    profiler = None
    for i in range(-20, n):  # 20 warm-up posts
        if i == 0 and cprofile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        body = body_for(i + 20, per_customer, prefix="profile")
        enqueue_s.clear()
        with CaptureQueriesContext(connection) as queries:
            t0 = time.perf_counter()
            response = client.post(
                "/webhooks/whatsapp",
                data=body,
                content_type="application/json",
                HTTP_X_HUB_SIGNATURE_256=headers(body)["X-Hub-Signature-256"],
            )
            total = time.perf_counter() - t0
        assert response.status_code == 200, response.content
        if i >= 0:
            sql = sum(float(q["time"]) for q in queries.captured_queries)
            rows.append((total * 1000, sql * 1000, sum(enqueue_s) * 1000, len(queries)))
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    med = [statistics.median(col) for col in zip(*rows, strict=True)]
    print(
        f"\nProfile: {n} POSTs in this process (django.test.Client, one at a time): per POST "
        f"median {med[0]:.2f} ms = SQL {med[1]:.2f} ms ({med[3]:.0f} queries) + tasks and "
        f"events (one Redis round trip) {med[2]:.2f} ms + the rest (Django, signature, JSON) "
        f"{med[0] - med[1] - med[2]:.2f} ms"
    )


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--posts", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--duplicates", type=int, default=100)
    parser.add_argument("--rate", type=float, default=0, help="POSTs/s in all; 0: closed loop")
    parser.add_argument("--per-customer", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--web-workers", type=int, default=1, help="uvicorn workers (make run: 1)")
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--profile", type=int, default=300, help="0: skip")
    parser.add_argument("--cprofile", action="store_true", help="cProfile the profile part")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument(
        "--defer-answers",
        action="store_true",
        help="start the Celery worker after the load (measures the webhook alone)",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.posts, args.concurrency, args.duplicates, args.per_customer = 8, 2, 2, 2
        args.workers, args.profile, args.drain_timeout = 1, 3, 120

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    services = Services()
    with sigterm_as_interrupt():
        try:
            env = services.start()
            os.environ.update(env)
            os.environ["DJANGO_SETTINGS_MODULE"] = "erp.settings"
            import django

            django.setup()
            from django.core.management import call_command

            assert_scratch()
            call_command("migrate", verbosity=0)
            # a reply per message: a customer's messages are not merged into bursts
            tenant = fixture(slug="bench-webhook", processing={"burst_quiet_ms": 0})
            base, web = start_web(services, env, args.web_workers)
            worker = None if args.defer_answers else start_worker(services, env, args.workers)
            print(
                f"services: scratch DB {services.db_name}, valkey, fake model + fake Graph API; "
                f"uvicorn "
                f"({args.web_workers} worker(s)) + Celery worker (-Q realtime, {args.workers} "
                f"processes"
                f"{', started after the load' if args.defer_answers else ''}); "
                f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if args.skip_load:
                profile(args.profile, args.per_customer, args.cprofile)
                return
            web_cpu0 = _cpu(web)
            worker_cpu0 = _cpu(worker)
            acks, statuses, seconds, unique = load(base, args)
            web_cpu = _cpu(web) - web_cpu0
            worker_cpu = _cpu(worker) - worker_cpu0
            mode = f"open loop at {args.rate:g}/s" if args.rate else "closed loop"
            print(
                f"\nLoad: {len(acks)} signed POSTs ({args.posts - args.duplicates} unique "
                f"messages, {unique} acknowledged, + {args.duplicates} redeliveries) from "
                f"{args.concurrency} clients, {mode}, "
                f"in {seconds:.1f} s ({len(acks) / seconds:.0f} POSTs/s)",
                flush=True,
            )
            print(
                f"  ack P50 {statistics.median(acks):.1f} ms  P95 {percentile(acks, 0.95):.1f} ms"
                f"  P99 {percentile(acks, 0.99):.1f} ms  max {max(acks):.1f} ms"
                f" | goal P95 < 50 ms | responses {statuses}"
            )
            print(
                f"  CPU during the load: uvicorn {web_cpu:.1f} s "
                f"({web_cpu * 1000 / len(acks):.1f} ms per POST), Celery worker {worker_cpu:.1f} s;"
                f" load average now {os.getloadavg()[0]:.1f}"
            )
            if worker is None:
                worker = start_worker(services, env, args.workers)
            stats, waited = drain(services, unique, args.drain_timeout)
            found = counts(tenant)
            print(
                f"  replies sent (at the fake Graph API) {stats['sends']} for {unique} messages"
                f" | model calls {stats['model_calls']} | read+typing marks "
                f"{stats['read_marks']} | all answered {waited:.1f} s after the last ack"
            )
            print(
                f"  inbound rows {found['inbound_rows']} (distinct ids "
                f"{found['distinct_ids']}, unanswered {found['unanswered']}) | replies stored "
                f"{found['replies']}, at most {found['max_replies_per_inbound']} per inbound | "
                f"deliveries sent {found['deliveries_sent']}, failed {found['deliveries_failed']}"
            )
            print(
                f"  replies by delivery status {found['replies_by_status']} | escalated "
                f"conversations by reason {found['escalated_by_reason'] or 'none'}"
            )
            ok = (
                found["distinct_ids"] == found["inbound_rows"] >= unique
                and stats["sends"] == found["replies"] == found["inbound_rows"]
                and found["max_replies_per_inbound"] == 1
            )
            print(f"  every message stored once and answered once: {'YES' if ok else 'NO'}")
            if args.profile:
                profile(args.profile, args.per_customer, args.cprofile)
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
        finally:
            services.stop()


if __name__ == "__main__":
    main()
