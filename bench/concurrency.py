"""Many WhatsApp contacts writing at once to `make run`, against a slow model: how long until
every reply was sent, with how many PostgreSQL connections and how much memory.

    .venv/bin/python bench/concurrency.py [--contacts 20] [--model-seconds 2]
                                          [--realtime-threads N] [--idle-seconds 5] [--smoke]

Presets (issue 14's goals): `--contacts 20 --model-seconds 2` (all replies sent in < 6 s) and
`--contacts 200 --model-seconds 3` (all answered in < 15 s with at most 20 PostgreSQL
connections in use); `--smoke` is `--contacts 3 --model-seconds 0.2` with short waits, a run of
seconds that checks the bench still works (CI).

Services (never the dev data): the embedded PostgreSQL under var/bench-concurrency/postgres with
a uniquely named scratch database `bench_concurrency_...` (created, migrated and given its
tenant, WhatsApp binding and agent here, as the owner; dropped at the end), a valkey server in a
temporary directory, and in one child process the fake Generative Language API (every answer
takes `--model-seconds`) and the fake Graph API (records each reply with the time it arrived).
Then the product as `make run` starts it: the supervisor (`python -m erp.supervisor`) with
DATABASE_URL = the scratch database as the application's role and REDIS_URL = that valkey, so it
starts no database of its own but runs migrate, demo_load, uvicorn, both workers and beat with
their production settings (pools, threads).

Load: first one message is answered (warm-up: the first answer of a process imports the model
SDK and opens connections; `--no-warm-up` measures that too), then `--contacts` client threads
released together each POST one signed webhook (one text message from a contact of their
own). Measured from that instant: when the fake Graph API
received each reply (first / median / P95 / max), replies sent against expected, duplicates
(more than one reply to a contact), the model calls that overlapped at most, PostgreSQL
connections of the application's role on the scratch database (pg_stat_activity every 50 ms:
the most in use, i.e. not idle, and the most open), and the RSS of the supervisor's process
tree (idle before the load, peak during it; the bench's PostgreSQL and valkey separately).
Exit status 1 when a reply is missing or duplicated.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _harness import Scratch, app_role_url, percentile, sigterm_as_interrupt  # noqa: E402
from _sampling import Sampler, postgres_pids, tree_rss_mb  # noqa: E402
from _whatsapp import fakes_env, fixture, headers, webhook_body  # noqa: E402

from erp.testing.whatsapp_traffic import ANSWER  # noqa: E402

BENCH_DB = "bench_concurrency"
DATA_DIR = ROOT / "var" / "bench-concurrency"
# The goals per preset: (seconds until every reply was sent, connections in use).
GOALS = {(20, 2.0): (6.0, None), (200, 3.0): (15.0, 20)}


# --- fakes (a process of their own: their threads never compete for our GIL) ----------------


def _serve_fakes(conn: Any, model_seconds: float) -> None:
    """Answers "stats" with the replies received (monotonic arrival time, recipient) and the
    model calls, forgets them on "reset", until told "stop"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from erp.testing.fake_google import FakeGoogle
    from erp.testing.fake_graph import FakeGraph

    google = FakeGoogle().start()
    google.default = google.reply_json(
        ANSWER, delay=model_seconds, input_tokens=300, output_tokens=20
    )
    graph = FakeGraph().start()
    conn.send({"google": google.url, "graph": graph.url})
    with contextlib.suppress(EOFError, KeyboardInterrupt):
        while (command := conn.recv()) != "stop":
            if command == "reset":
                google.server.requests_clear()
                graph.server.requests_clear()
                conn.send(None)
                continue
            sends = [r for r in graph.requests if "status" not in r.json()]
            conn.send(
                {
                    "sends": [(r.received_at, str(r.json().get("to", ""))) for r in sends],
                    "model_calls": len(google.generate_requests),
                    "model_started": [
                        r.received_at for r in google.requests if "Content" in r.path
                    ],
                    "model_max_in_flight": google.server.max_in_flight,
                }
            )
    google.stop()
    graph.stop()


# --- the stack -------------------------------------------------------------------------------


class Services(Scratch):
    """The scratch services and fakes, and `make run` on top of them (stopped first)."""

    def __init__(self) -> None:
        super().__init__(data_dir=DATA_DIR, db_name=BENCH_DB)
        self.supervisor: subprocess.Popen[bytes] | None = None

    def start_fakes(self, model_seconds: float) -> dict[str, str]:
        env, urls = self.start(_serve_fakes, model_seconds)
        return {**env, **fakes_env(urls)}

    def stack_start(
        self, model_seconds: float, *, slug: str, env: Mapping[str, str] | None = None
    ) -> str:
        """Scratch database migrated with its fixture (`slug`), `make run` on it (`env` added
        to its environment); returns its base URL. The benches that load `make run` share it."""
        fakes = self.start_fakes(model_seconds)
        os.environ.update(fakes)
        os.environ["DJANGO_SETTINGS_MODULE"] = "erp.settings"
        import django

        django.setup()
        from django.core.management import call_command

        from erp import embedded

        call_command("migrate", verbosity=0)
        fixture(slug=slug)
        port = embedded.free_port()
        self.run_stack({**fakes, "DATABASE_URL": app_role_url(), **(env or {})}, port)
        print(
            f"make run ready (scratch DB {self.db_name}, fake model {model_seconds:g} s, "
            f"fake Graph API); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        return f"http://127.0.0.1:{port}"

    def stats(self) -> dict[str, Any]:
        return dict(self.ask("stats"))

    def run_stack(self, env: dict[str, str], port: int, timeout: float = 180) -> None:
        """`make run` (the supervisor) until it says it is ready and /healthz answers."""
        import requests

        environ = {k: v for k, v in os.environ.items() if k != "DB_POOL_MAX_SIZE"}
        environ.update(env, PORT=str(port), PYTHONUNBUFFERED="1")
        log = open(DATA_DIR / "supervisor.log", "wb")  # noqa: SIM115 - handed to the child
        self.supervisor = subprocess.Popen(
            [sys.executable, "-m", "erp.supervisor"],
            cwd=ROOT,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.supervisor.poll() is not None:
                raise RuntimeError(f"make run exited; see {DATA_DIR / 'supervisor.log'}")
            ready = b"Ctrl-C" in (DATA_DIR / "supervisor.log").read_bytes()
            with contextlib.suppress(requests.RequestException):
                if ready and requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).ok:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"make run not ready in {timeout:.0f} s; see {DATA_DIR}")

    def stop(self) -> None:
        if self.supervisor is not None and self.supervisor.poll() is None:
            self.supervisor.send_signal(signal.SIGINT)  # Ctrl-C: it stops its children
            try:
                self.supervisor.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.supervisor.pid, signal.SIGKILL)
                self.supervisor.wait()
        super().stop()


# --- load ------------------------------------------------------------------------------------


def send_all(base: str, contacts: range) -> tuple[float, dict[str, int], float]:
    """The webhook of each contact numbered in `contacts`, POSTed at once. Returns the instant
    they were released (time.monotonic), the responses by status and when the last was
    acknowledged."""
    import requests

    bodies = [webhook_body(n=n, customer=n, prefix="concurrency") for n in contacts]
    statuses: dict[str, int] = {}
    acked: list[float] = []
    lock = threading.Lock()
    ready = threading.Barrier(len(bodies) + 1)

    def client(body: bytes) -> None:
        session = requests.Session()
        session.get(f"{base}/healthz", timeout=10)  # the TCP connection, before the start
        ready.wait(timeout=60)
        try:
            code = str(session.post(f"{base}/webhooks/whatsapp", data=body,
                                    headers=headers(body), timeout=60).status_code)  # fmt: skip
        except requests.RequestException as exc:
            code = type(exc).__name__
        with lock:
            statuses[code] = statuses.get(code, 0) + 1
            acked.append(time.monotonic())

    threads = [threading.Thread(target=client, args=(b,), daemon=True) for b in bodies]
    for t in threads:
        t.start()
    ready.wait(timeout=60)
    released = time.monotonic()
    deadline = released + 120
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return released, statuses, max(acked, default=released)


def wait_replies(services: Services, expected: int, timeout: float, settle: float) -> Any:
    """Stats once every expected reply arrived (or `timeout`), `settle` seconds later so a
    duplicate would be counted too."""
    deadline = time.monotonic() + timeout
    stats = services.stats()
    while len(stats["sends"]) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
        stats = services.stats()
    time.sleep(settle)
    return services.stats()


# --- report ----------------------------------------------------------------------------------


def report(args: argparse.Namespace, run: dict[str, Any]) -> bool:
    """Prints the figures; True when every contact got exactly one reply."""
    stats, released = run["stats"], run["released"]
    first_reply: dict[str, float] = {}
    for at, to in sorted(stats["sends"]):
        first_reply.setdefault(to.lstrip("+"), at - released)
    times = sorted(first_reply.values())
    sends = len(stats["sends"])
    duplicates = sends - len(first_reply)
    sampler: Sampler = run["sampler"]
    print(
        f"\n{args.contacts} WhatsApp contacts at once, model {args.model_seconds:g} s, "
        f"{'warm' if args.warm_up else 'cold'} stack, "
        f"real-time worker threads {args.realtime_threads or 'default'}, pools "
        f"{args.db_pool_max_size or 'default'}; webhook responses {run['statuses']}, the last "
        f"acknowledged after {run['acked'] - released:.2f} s"
    )
    started = sorted(at - released for at in stats["model_started"])
    if started:
        print(f"  model calls started after: first {started[0]:.2f} s  max {started[-1]:.2f} s")
    if times:
        print(
            f"  replies sent after: first {times[0]:.2f} s  median {statistics.median(times):.2f}"
            f" s  P95 {percentile(times, 0.95):.2f} s  max {times[-1]:.2f} s"
        )
    print(
        f"  replies sent {len(first_reply)} of {args.contacts} expected | duplicates "
        f"{duplicates} | model calls {stats['model_calls']}, at most "
        f"{stats['model_max_in_flight']} at once"
    )
    print(
        f"  PostgreSQL connections of {run['role']}: at most {sampler.max_in_use} in use "
        f"(not idle), {sampler.max_open} open"
    )
    print(
        f"  RSS of make run's processes: idle {run['idle_rss']:.0f} MB, peak "
        f"{sampler.peak_rss_mb:.0f} MB (the bench's PostgreSQL + valkey, idle: "
        f"{run['services_rss']:.0f} MB)"
    )
    goal = GOALS.get((args.contacts, float(args.model_seconds)))
    if goal is not None and times:
        seconds, connections = goal
        met = times[-1] < seconds and len(times) == args.contacts
        line = f"  goal: all replies in < {seconds:g} s: {'met' if met else 'NOT met'}"
        if connections is not None:
            ok = sampler.max_open <= connections
            line += f"; <= {connections} connections: {'met' if ok else 'NOT met'}"
        print(line)
    return len(first_reply) == args.contacts and duplicates == 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contacts", type=int, default=20)
    parser.add_argument("--model-seconds", type=float, default=2.0)
    parser.add_argument(
        "--realtime-threads", type=int, default=0, help="CELERY_REALTIME_CONCURRENCY; 0: make run's"
    )
    parser.add_argument(
        "--db-pool-max-size",
        type=int,
        default=0,
        help="DB_POOL_MAX_SIZE of every child; 0: make run's",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="no first message answered before the load (measures a cold worker)",
    )
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="before the idle RSS")
    parser.add_argument("--timeout", type=float, default=0, help="0: from the load's size")
    parser.add_argument("--smoke", action="store_true", help="3 contacts, 0.2 s model, short")
    args = parser.parse_args()
    args.settle = 2.0  # seconds after the last expected reply, for duplicates to show
    if args.smoke:
        args.contacts, args.model_seconds, args.idle_seconds, args.settle = 3, 0.2, 0.5, 0.5
    args.timeout = args.timeout or 60 + args.contacts * args.model_seconds
    return args


def stack_start(services: Services, args: argparse.Namespace) -> str:
    """`make run` with the threads and pool size asked for; returns its base URL."""
    stack_env = {}
    if args.realtime_threads:
        stack_env["CELERY_REALTIME_CONCURRENCY"] = str(args.realtime_threads)
    if args.db_pool_max_size:
        stack_env["DB_POOL_MAX_SIZE"] = str(args.db_pool_max_size)
    return services.stack_start(args.model_seconds, slug="bench-concurrency", env=stack_env)


def measure(services: Services, args: argparse.Namespace, base: str) -> dict[str, Any]:
    """The warm-up, the idle figures, then the load under the sampler."""
    from django.conf import settings

    assert services.supervisor is not None and services.redis is not None
    if args.warm_up:
        # The first answer of a process imports the model SDK and opens connections: seconds
        # of CPU that belong to start-up, not to answering many at once.
        send_all(base, range(-1, 0))
        wait_replies(services, 1, args.timeout, settle=0)
        services.ask("reset")
    time.sleep(args.idle_seconds)
    run: dict[str, Any] = {
        "role": settings.DATABASE_APP_ROLE,
        "idle_rss": tree_rss_mb([services.supervisor.pid]),
        "services_rss": tree_rss_mb([*postgres_pids(DATA_DIR / "postgres"), services.redis.pid]),
    }
    owner_url = urlunsplit(urlsplit(services.admin_url)._replace(path=f"/{services.db_name}"))
    sampler = Sampler(owner_url, run["role"], services.db_name, services.supervisor.pid).start()
    try:
        run["released"], run["statuses"], run["acked"] = send_all(base, range(args.contacts))
        run["stats"] = wait_replies(services, args.contacts, args.timeout, args.settle)
    finally:
        sampler.stop()
    run["sampler"] = sampler
    return run


def main() -> None:
    args = parse_args()
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    services = Services()
    ok = False
    with sigterm_as_interrupt():
        try:
            base = stack_start(services, args)
            ok = report(args, measure(services, args, base))
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
        finally:
            services.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
