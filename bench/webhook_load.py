"""WhatsApp webhook under load: acknowledgement latency, and every message stored once and
answered once.

    .venv/bin/python bench/webhook_load.py [--posts 2000] [--concurrency 50] [--duplicates 100]
                                           [--rate 0] [--per-customer 2] [--workers 2]
                                           [--pool prefork|threads]
                                           [--profile 300] [--smoke]

Services (never the dev data): the embedded PostgreSQL under var/bench-webhook/postgres with
a scratch database `bench_webhook_<pid>_<random>` (created, migrated, dropped at the end;
`BENCH_POSTGRES_URL` names another server to create it on), a valkey server in
a temporary directory, and in one child process the fake Generative Language API (answers at
once) and the fake Graph API (`erp.testing.fake_graph`, counts the replies it receives). Then,
uvicorn (1 worker, like `make run`) serving erp.asgi and a Celery worker (`-Q realtime`,
by default Celery's process pool with `--workers` processes, as before issue 14; `make run`
and docker-compose run the real-time queue on the threads pool: `--pool threads --workers N`
for N threads), both with the production connection pool. (Celery's own Django fix-up closes
a process's connection pool before and after every task: about 2 new PostgreSQL sessions per
message, each loading the catalog again. Ours, erp/celery.py, keeps it; "sessions" in the
database line shows which ran.)

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
Where the time went, per message, from the first POST to the last reply: the worker's CPU,
the machine's busy CPU and its split by program (PostgreSQL, valkey, uvicorn, the worker, this
process), the database's transactions, rows, sessions and index reads (pg_stat_database,
pg_stat_user_tables, pg_stat_all_indexes) and the Redis commands (INFO commandstats).
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


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores."""
    import psutil

    times = psutil.cpu_times()
    total = sum(times)
    return total - times.idle - getattr(times, "iowait", 0.0), total


def _cpu_by_program() -> dict[str, float]:
    """CPU seconds of every process on the machine by program (a Python process by what it
    runs), children that exited included: where the machine's time went."""
    import psutil

    out: dict[str, float] = {}
    for proc in psutil.process_iter(["name", "cmdline", "cpu_times"]):
        times = proc.info["cpu_times"]
        if times is None:
            continue
        name = proc.info["name"] or "?"
        if name.startswith("python"):
            line = " ".join(proc.info["cmdline"] or [])
            name = next((k for k in ("celery", "uvicorn", "webhook_load") if k in line), name)
        spent = times.user + times.system + times.children_user + times.children_system
        out[name] = out.get(name, 0.0) + spent
    return out


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


def start_worker(services: Services, env: dict[str, str], workers: int, pool: str) -> Any:
    return services.spawn(
        [sys.executable, "-m", "celery", "-A", "erp", "worker", "-Q", "realtime", "-c",
         str(workers), "--pool", pool, "-l", "WARNING", "--without-gossip", "--without-mingle",
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


def work_snapshot() -> dict[str, float]:
    """Cumulative work counters of the scratch database and of Redis: transactions and rows
    (pg_stat_database), index and sequential scans per table (pg_stat_user_tables), calls per
    Redis command (INFO commandstats)."""
    import redis
    from django.conf import settings
    from django.db import DatabaseError, connection

    out: dict[str, float] = {}
    with connection.cursor() as cursor:
        with contextlib.suppress(DatabaseError):  # PostgreSQL 15+ (else: a second late)
            cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute(
            "SELECT xact_commit + xact_rollback, tup_returned, tup_fetched,"
            " tup_inserted + tup_updated + tup_deleted, sessions FROM pg_stat_database"
            " WHERE datname = current_database()"
        )
        row = cursor.fetchone()
        for key, value in zip(
            ("transactions", "returned", "fetched", "written", "sessions"), row, strict=True
        ):
            out[f"db {key}"] = float(value)
        cursor.execute("SELECT relname, seq_scan, coalesce(idx_scan, 0) FROM pg_stat_user_tables")
        for name, seq, idx in cursor.fetchall():
            out[f"seq {name}"], out[f"idx {name}"] = float(seq), float(idx)
        cursor.execute("SELECT indexrelname, idx_tup_read FROM pg_stat_all_indexes")
        for name, read in cursor.fetchall():
            out[f"read {name}"] = out.get(f"read {name}", 0.0) + float(read)
    stats = redis.Redis.from_url(settings.REDIS_URL).info("commandstats")
    for key, value in stats.items():
        out[f"redis {key.removeprefix('cmdstat_')}"] = float(value["calls"])
    return out


def work_report(before: dict[str, float], after: dict[str, float], messages: int) -> list[str]:
    """The work per message between two `work_snapshot`s."""
    per = {k: (v - before.get(k, 0.0)) / max(1, messages) for k, v in after.items()}

    def top(prefix: str, n: int) -> str:
        found = sorted(((v, k) for k, v in per.items() if k.startswith(prefix) and v >= 0.05))
        return ", ".join(f"{k.removeprefix(prefix)} {v:.1f}" for v, k in reversed(found[-n:]))

    db = ", ".join(f"{k.removeprefix('db ')} {per[k]:.1f}" for k in per if k.startswith("db "))
    return [
        f"  database per message: {db}",
        f"  index scans per message: {top('idx ', 8)}",
        f"  sequential scans per message: {top('seq ', 5) or 'none'}",
        f"  index entries read per message: {top('read ', 8)}",
        f"  Redis commands per message: {top('redis ', 10)}",
    ]


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
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="Celery worker processes (threads with --pool threads)",
    )
    parser.add_argument(
        "--pool",
        choices=("prefork", "threads"),
        default="prefork",
        help="the worker's pool; make run and docker-compose: threads (see the module docstring)",
    )
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
            worker = (
                None if args.defer_answers else start_worker(services, env, args.workers, args.pool)
            )
            print(
                f"services: scratch DB {services.db_name}, valkey, fake model + fake Graph API; "
                f"uvicorn "
                f"({args.web_workers} worker(s)) + Celery worker (-Q realtime, {args.workers} "
                f"{'processes' if args.pool == 'prefork' else 'threads'}"
                f"{', started after the load' if args.defer_answers else ''}); "
                f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if args.skip_load:
                profile(args.profile, args.per_customer, args.cprofile)
                return
            web_cpu0 = _cpu(web)
            worker_cpu0 = _cpu(worker)
            busy0, total0 = _machine_busy()
            programs0 = _cpu_by_program()
            work0 = work_snapshot()
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
                worker = start_worker(services, env, args.workers, args.pool)
            stats, waited = drain(services, unique, args.drain_timeout)
            answer_cpu = _cpu(worker) - worker_cpu0  # 0 before a deferred worker started
            busy1, total1 = _machine_busy()
            programs1 = _cpu_by_program()
            work1 = work_snapshot()
            found = counts(tenant)
            print(
                f"  replies sent (at the fake Graph API) {stats['sends']} for {unique} messages"
                f" | model calls {stats['model_calls']} | read+typing marks "
                f"{stats['read_marks']} | all answered {waited:.1f} s after the last ack,"
                f" {seconds + waited:.1f} s after the first POST"
            )
            print(
                f"  Celery worker CPU to answer them all: {answer_cpu:.1f} s "
                f"({answer_cpu * 1000 / max(1, unique):.1f} ms per message); the machine's "
                f"cores were busy {100 * (busy1 - busy0) / max(1e-9, total1 - total0):.0f} % "
                f"of the time ({(busy1 - busy0) * 1000 / max(1, unique):.1f} ms per message, "
                "PostgreSQL and the fakes included)"
            )
            spent = {k: v - programs0.get(k, 0.0) for k, v in programs1.items()}
            top = sorted(((v, k) for k, v in spent.items() if v >= 0.5), reverse=True)
            print(
                "  CPU by program (ms per message): "
                + ", ".join(f"{k} {v * 1000 / max(1, unique):.1f}" for v, k in top)
            )
            print("\n".join(work_report(work0, work1, unique)))
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
