"""`make run`: one foreground command that supervises the whole embedded stack.

Order: embedded PostgreSQL (unless DATABASE_URL) -> valkey (unless REDIS_URL) -> migrate ->
demo_load -> uvicorn (ASGI, so SSE streams) + Celery worker + Celery beat. Children run in
sessions of their own; the supervisor alone receives Ctrl-C / SIGTERM and stops them in
reverse order. If a child dies, it says which and stops the rest with exit status 1.
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
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_TIMEOUT = 15.0


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)


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
        py = sys.executable
        concurrency = self.env.get("CELERY_WORKER_CONCURRENCY", "2")
        self.children = [
            Child(
                "web",
                [
                    py,
                    "-m",
                    "uvicorn",
                    "erp.asgi:application",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--no-access-log",
                    "--lifespan",
                    "off",
                ],
            ),
            Child(
                "worker",
                [
                    py,
                    "-m",
                    "celery",
                    "-A",
                    "erp",
                    "worker",
                    "-Q",
                    "realtime,bulk",
                    "-c",
                    concurrency,
                    "-l",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                    "-n",
                    "embedded@%h",
                ],
            ),
            Child(
                "beat",
                [
                    py,
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
                f"  Healthz:     {base}/healthz\n"
                f"  Demo login:  {login}\n"
                f"  Logs:        {self.data_dir / 'logs'}\n\n"
                "  Ctrl-C para detener.\n",
                flush=True,
            )
            while not self.stopping:
                child = self.dead_child()
                if child is not None:
                    assert child.proc is not None
                    say(
                        f"{child.name} exited with status {child.proc.returncode}; "
                        f"stopping the rest (log: {child.log})"
                    )
                    status = 1
                    break
                time.sleep(0.2)
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
