"""`make run`: one foreground command that supervises the whole embedded stack.

Order: embedded PostgreSQL (unless DATABASE_URL) -> valkey (unless REDIS_URL) -> migrate ->
demo_load -> uvicorn (ASGI, so SSE streams) + a real-time Celery worker (queue `realtime`,
threads: a reply mostly waits for the model, so tens of them share one process) + a bulk
worker (queue `bulk`, processes: ingestion is CPU work, and an upload never delays a customer's
reply) + Celery beat. Each child gets its own database pool size (DB_POOL_PER_CHILD).
Children run in sessions of their own; the supervisor alone receives Ctrl-C / SIGTERM and
stops them in reverse order.

A child that dies is started again after a backoff (1 s, doubling up to 30 s; back to 1 s
once it has run for a minute), and the supervisor says so; so is the embedded valkey or
PostgreSQL. The workers and beat reconnect to a restarted broker by themselves. Everything
stops (exit status 1) only when the web server or the database cannot come back: the web
server exits WEB_GIVE_UP times in a row within its first seconds, or PostgreSQL does not
start again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_TIMEOUT = 15.0
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
STABLE_AFTER = 60.0  # a child that ran this long starts again from the first backoff
WEB_GIVE_UP = 3  # the web server exiting this many times in a row, each within WEB_EARLY
WEB_EARLY = 10.0
SERVICE_CHECK_EVERY = 1.0
PG_START_ATTEMPTS = 5
# Threads of the real-time worker (CELERY_REALTIME_CONCURRENCY): replies in flight at once. A
# thread waiting for the model costs ~no CPU, little memory (Celery starts them as tasks come),
# and no database connection once the engine holds none during the model call. 200 contacts at
# once with a 3 s model (bench/concurrency.py) take two rounds of model calls, not four as
# with 64 threads (issue 14: all answered within 15 s).
REALTIME_THREADS = "100"
# Database connections per process of each child (psycopg pool, DB_POOL_MAX_SIZE), chosen so the
# whole stack stays within 20 at once: web 8 + real-time 8 + bulk 2 per process (1 process by
# default) + beat 1 (it never queries; a cap all the same) = 19. The real-time worker's threads
# share its 8: each holds one only for its short transactions. DB_POOL_MAX_SIZE set in the
# environment applies to every child instead.
DB_POOL_PER_CHILD = {"web": 8, "worker-realtime": 8, "worker-bulk": 2, "beat": 1}
# A worker thread may wait longer for a pooled connection than a web request, which answers 503
# after DB_POOL_TIMEOUT_SECONDS (5): nobody holds an HTTP request open behind it, and a task that
# gives up is only answered by the sweep a minute later. 60 s covers every thread queueing for
# the pool even while each answer holds a connection through a 3-5 s model call.
REALTIME_POOL_TIMEOUT = "60"


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    started_at: float = 0.0
    restart_at: float | None = None  # when a dead child is due to start again
    backoff: float = BACKOFF_FIRST
    early_exits: int = 0  # exits in a row within WEB_EARLY of starting


def web_command(port: int, host: str = "127.0.0.1") -> list[str]:
    """uvicorn as `make run` starts it. `--no-proxy-headers`: uvicorn would otherwise take the
    client's address from X-Forwarded-For on connections from loopback, i.e. from anyone on
    this machine; the address behind proxies is read by `erp.http_request.client_ip`, as
    TRUSTED_PROXY_HOPS says."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "erp.asgi:application",
        "--host",
        host,
        "--port",
        str(port),
        "--no-proxy-headers",
        "--no-access-log",
        "--lifespan",
        "off",
    ]


def realtime_threads(env: Mapping[str, str]) -> str:
    """Threads of the real-time worker: CELERY_REALTIME_CONCURRENCY, else
    CELERY_WORKER_CONCURRENCY (which sized this worker before it ran threads: still honoured),
    else REALTIME_THREADS."""
    return (
        env.get("CELERY_REALTIME_CONCURRENCY")
        or env.get("CELERY_WORKER_CONCURRENCY")
        or REALTIME_THREADS
    )


def worker_command(queue: str, concurrency: str, pool: str = "prefork") -> list[str]:
    """A Celery worker consuming `queue` with `concurrency` slots of `pool` (prefork: processes;
    threads: threads of one process)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "erp",
        "worker",
        "-Q",
        queue,
        "-c",
        concurrency,
        "-P",
        pool,
        "-l",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "-n",
        f"{queue}@%h",
    ]


def say(message: str) -> None:
    print(f"[run] {message}", flush=True)


class Supervisor:
    def __init__(self) -> None:
        self.data_dir = Path(os.environ.get("ERP_DATA_DIR") or BASE_DIR / "var").resolve()
        self.port = int(os.environ.get("PORT") or 8000)
        self.env = dict(os.environ)
        self.env.setdefault("ERP_DATA_DIR", str(self.data_dir))
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.env["ERP_EMBEDDED"] = "1"
        self.children: list[Child] = []
        self.redis: subprocess.Popen[bytes] | None = None
        self.pgdata: Path | None = None
        self.stopping = False

    # --- services --------------------------------------------------------------------------
    def start_services(self) -> None:
        from erp import embedded

        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.env.get("DATABASE_URL"):
            self.pgdata = self.data_dir / embedded.POSTGRES_DIRNAME
            started = time.monotonic()
            self.env["DATABASE_URL"] = embedded.start_postgres_detached(self.pgdata)
            say(
                f"PostgreSQL 18 + pgvector ({self.pgdata}) ready in "
                f"{time.monotonic() - started:.1f} s"
            )
        else:
            say("DATABASE_URL set: using the external PostgreSQL")
        if not self.env.get("REDIS_URL"):
            redis_dir = self.data_dir / embedded.REDIS_DIRNAME
            self.redis = embedded.start_redis(redis_dir)
            self.env["REDIS_URL"] = embedded.redis_url(redis_dir)
            say(f"valkey ({redis_dir}) ready")
        else:
            say("REDIS_URL set: using the external Redis")

    def stop_services(self) -> None:
        from erp import embedded

        if self.redis is not None and self.redis.poll() is None:
            self.redis.terminate()
            try:
                self.redis.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.redis.kill()
        if self.pgdata is not None:
            try:
                embedded.stop_postgres(self.pgdata)
            except Exception as exc:  # the server may already be down
                say(f"PostgreSQL stop: {exc}")

    # --- one-shot steps ---------------------------------------------------------------------
    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            start_new_session=True,
        )
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            raise SystemExit(f"[run] manage.py {' '.join(args)} failed ({result.returncode})")
        return result.stdout.strip()

    # --- long-running children --------------------------------------------------------------
    def start_children(self) -> None:
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        threads = realtime_threads(self.env)
        bulk_concurrency = self.env.get("CELERY_BULK_CONCURRENCY") or "1"
        self.children = [
            Child("web", web_command(self.port)),
            Child("worker-realtime", worker_command("realtime", threads, pool="threads")),
            Child("worker-bulk", worker_command("bulk", bulk_concurrency)),
            Child(
                "beat",
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "erp",
                    "beat",
                    "-l",
                    "INFO",
                    "-s",
                    str(self.data_dir / "celerybeat-schedule"),
                ],
            ),
        ]
        for child in self.children:
            child.log = logs / f"{child.name}.log"
            child.extra_env.update(self.pool_env(child.name))
            self.spawn(child)

    def pool_env(self, name: str) -> dict[str, str]:
        """The database pool of child `name`: its share of the connection budget, unless the
        environment sets one for all."""
        env = {}
        if not self.env.get("DB_POOL_MAX_SIZE"):
            env["DB_POOL_MAX_SIZE"] = str(DB_POOL_PER_CHILD[name])
        if name == "worker-realtime" and not self.env.get("DB_POOL_TIMEOUT_SECONDS"):
            env["DB_POOL_TIMEOUT_SECONDS"] = REALTIME_POOL_TIMEOUT
        return env

    def spawn(self, child: Child) -> None:
        assert child.log is not None
        out = open(child.log, "ab")  # noqa: SIM115 - handed to the child
        child.proc = subprocess.Popen(
            child.argv,
            cwd=BASE_DIR,
            env={**self.env, **child.extra_env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()
        child.started_at = time.monotonic()
        child.restart_at = None

    def stop_children(self) -> None:
        for child in reversed(self.children):
            if child.proc is not None and child.proc.poll() is None:
                child.proc.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in self.children:
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{child.name} did not stop in {STOP_TIMEOUT:.0f} s: killing it")
                os.killpg(child.proc.pid, signal.SIGKILL)
                child.proc.wait()
            else:
                # Celery's prefork pool children and uvicorn workers share the group.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.proc.pid, signal.SIGKILL)

    def dead_child(self) -> Child | None:
        for child in self.children:
            if child.proc is not None and child.proc.poll() is not None:
                return child
        return None

    def wait_healthy(self, timeout: float = 60.0) -> bool:
        url = f"http://127.0.0.1:{self.port}/healthz"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping:
            if self.dead_child():
                return False
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        return False

    # --- keeping it running -------------------------------------------------------------------
    def reap(self, child: Child, now: float) -> None:
        """A child exited: plan its restart after a backoff, and say so."""
        assert child.proc is not None
        status = child.proc.returncode
        # Its prefork pool or leftover processes must not hold the port or the queue.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        ran = now - child.started_at
        if ran >= STABLE_AFTER:
            child.backoff = BACKOFF_FIRST
        child.early_exits = child.early_exits + 1 if ran < WEB_EARLY else 0
        child.proc = None
        child.restart_at = now + child.backoff
        say(
            f"{child.name} exited with status {status} after {ran:.1f} s; restarting it in "
            f"{child.backoff:.0f} s (log: {child.log})"
        )
        child.backoff = min(child.backoff * 2, BACKOFF_MAX)

    def web_gave_up(self) -> bool:
        web = next(child for child in self.children if child.name == "web")
        return web.early_exits >= WEB_GIVE_UP

    def keep_services(self) -> bool:
        """Restarts the embedded valkey / PostgreSQL if they died. False: the database cannot
        come back."""
        from erp import embedded

        if self.redis is not None and self.redis.poll() is not None:
            say(f"valkey exited with status {self.redis.returncode}; restarting it")
            redis_dir = self.data_dir / embedded.REDIS_DIRNAME
            try:
                self.redis = embedded.start_redis(redis_dir)
            except RuntimeError as exc:
                say(f"valkey did not start again: {exc}; retrying")
            else:
                say("valkey ready again (workers and beat reconnect by themselves)")
        if self.pgdata is not None and not embedded.postgres_running(self.pgdata):
            say("PostgreSQL is not running; starting it again")
            # After a kill -9 its old backends may hold shared memory for a moment.
            for attempt in range(1, PG_START_ATTEMPTS + 1):
                if self.stopping:
                    return True
                try:
                    embedded.start_postgres_detached(self.pgdata)
                except (subprocess.SubprocessError, OSError) as exc:
                    say(f"PostgreSQL start attempt {attempt} failed: {exc}")
                    time.sleep(2)
                    continue
                say("PostgreSQL ready again")
                return True
            return False
        return True

    def supervise(self) -> int:
        """Until Ctrl-C / SIGTERM (0), or until the web server or database cannot come back (1)."""
        next_service_check = 0.0
        while not self.stopping:
            now = time.monotonic()
            if now >= next_service_check:
                next_service_check = now + SERVICE_CHECK_EVERY
                if not self.keep_services():
                    say("PostgreSQL cannot come back: stopping everything")
                    return 1
            for child in self.children:
                if child.proc is not None and child.proc.poll() is not None:
                    self.reap(child, now)
                    if child.name == "web" and self.web_gave_up():
                        say(
                            f"web exited {WEB_GIVE_UP} times in a row within {WEB_EARLY:.0f} s "
                            f"of starting: it cannot come back; stopping everything "
                            f"(log: {child.log})"
                        )
                        return 1
                elif (
                    child.proc is None and child.restart_at is not None and now >= child.restart_at
                ):
                    self.spawn(child)
                    say(f"{child.name} started again")
            time.sleep(0.2)
        return 0

    # --- main --------------------------------------------------------------------------------
    def request_stop(self, signum: int, _frame: object) -> None:
        if not self.stopping:
            say(f"{signal.Signals(signum).name} received: stopping")
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)
        started = time.monotonic()
        status = 0
        try:
            self.start_services()
            if self.stopping:
                return 0
            say("applying migrations")
            self.manage("migrate", "--noinput", "-v", "0")
            if self.pgdata is not None:
                # Migrations ran as the embedded server's superuser; everything else connects
                # as the application's role, so row-level security applies (erp/tenancy/rls.py).
                from erp.env import database_url_as

                role = self.env.get("DATABASE_APP_ROLE") or "erp_app"
                self.env["DATABASE_URL"] = database_url_as(self.env["DATABASE_URL"], role)
            login = self.manage("demo_load").splitlines()[-1]
            if self.stopping:
                return 0
            self.start_children()
            if not self.wait_healthy():
                if self.stopping:
                    return 0
                child = self.dead_child()
                name = child.name if child else "web"
                say(f"{name} failed to start; see {self.data_dir / 'logs' / (name + '.log')}")
                return 1
            base = f"http://127.0.0.1:{self.port}"
            say(f"ready in {time.monotonic() - started:.1f} s")
            print(
                f"\n  Sitio:       {base}/\n"
                f"  Admin:       {base}/admin/\n"
                f"  API docs:    {base}/api/docs/\n"
                f"  Chat web:    {base}/webchat/demo   (tras entrar en el admin)\n"
                f"  Bandeja:     {base}/inbox/\n"
                f"  Estadísticas: {base}/stats/\n"
                f"  Healthz:     {base}/healthz\n"
                f"  Demo login:  {login}\n"
                f"  Logs:        {self.data_dir / 'logs'}\n\n"
                "  Ctrl-C para detener.\n",
                flush=True,
            )
            status = self.supervise()
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.stop_children()
            self.stop_services()
            say("stopped")
        return status


def main() -> None:
    sys.exit(Supervisor().run())


if __name__ == "__main__":
    main()
