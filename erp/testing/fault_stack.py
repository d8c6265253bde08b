"""A stack of our own for fault tests: PostgreSQL and valkey that a test may kill and restart
without touching the suite's shared services, the web server and workers as `make run` starts
them (production connection pool), the fake model and fake Graph API, and a client that posts
signed WhatsApp webhooks and redelivers like Meta.

Everything has a deadline; counts come straight from the database and the fake Graph API.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import requests

from erp import embedded
from erp.supervisor import web_command, worker_command
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.processes import BASE_DIR, healthy, stop, wait_until
from erp.testing.whatsapp_traffic import ANSWER, signed_headers, text_webhook

APP_SECRET = "fault-app-secret"
NUMBER = "106540352242999"
DB_NAME = "faults"
SWEEP_SECONDS = 2  # beat re-queues unanswered channel messages this old, this often

_FIXTURE = """
from decimal import Decimal
from ai_agents.models import ChannelBinding
from ai_agents.services.agents import agent_create
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
tenant = Tenant.objects.create(slug="faults", name="Faults", ai_credit_balance_usd=Decimal("1000"))
with tenant_scope(tenant):
    agent = agent_create(tenant=tenant, data={"name": "Lucía", "system_prompt": "Responde breve.",
        "processing_config": {"tokens_per_minute": 10000000, "llm_retry_delay_ms": 0}})
    ChannelBinding.objects.create(tenant=tenant, agent=agent, type=ChannelBinding.Type.WHATSAPP,
        phone_number_id=%r, access_token="fault-token")
""" % (NUMBER,)  # noqa: UP031 - a literal inside code text


def _one(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The one row of an aggregate query (psycopg types fetchone as optional)."""
    row = cursor.fetchone()
    assert row is not None
    return row


@dataclass
class Delivery:
    """One message posted until acknowledged (Meta redelivers a non-200)."""

    wamid: str
    statuses: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return 200 in self.statuses


class FaultStack:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pgdata = root / "postgres"
        self.redis_dir = root / "redis"
        self.logs = root / "logs"
        self.google = FakeGoogle()
        self.graph = FakeGraph()
        self.port = embedded.free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.redis: subprocess.Popen[bytes] | None = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.database_url = ""
        self.env: dict[str, str] = {}

    # --- services ---------------------------------------------------------------------------
    def start(self) -> FaultStack:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.google.start()
        self.google.default = self.google.reply_json(ANSWER)
        self.graph.start()
        admin_url = self.start_postgres()
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB_NAME}")
        self.database_url = urlunsplit(urlsplit(admin_url)._replace(path=f"/{DB_NAME}"))
        self.start_redis()
        self.env = {
            "DATABASE_URL": self.database_url,
            "REDIS_URL": embedded.redis_url(self.redis_dir),
            "ERP_DATA_DIR": str(self.root),
            "GOOGLE_AI_API_KEY": "fault-key",
            "GOOGLE_AI_BASE_URL": self.google.url,
            "WHATSAPP_APP_SECRET": APP_SECRET,
            "WHATSAPP_VERIFY_TOKEN": "fault-verify",
            "WHATSAPP_GRAPH_BASE_URL": self.graph.url,
            "WHATSAPP_RETRY_BASE_MS": "0",
            "AI_CREDITS_MODE": "off",
            "CHANNEL_PENDING_SWEEP_SECONDS": str(SWEEP_SECONDS),
            "LOG_LEVEL": "INFO",
        }
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("shell", "-c", _FIXTURE)
        self.start_web()
        self.start_worker()
        self.spawn("beat", ["-m", "celery", "-A", "erp", "beat", "-l", "INFO", "-s",
                            str(self.root / "celerybeat-schedule")])  # fmt: skip
        return self

    def child_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "DB_POOL_MAX_SIZE"}  # production pool
        return {**env, **self.env}

    def manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.child_env(),
            check=True,
            capture_output=True,
            timeout=300,
        )

    def start_postgres(self) -> str:
        return embedded.start_postgres_detached(self.pgdata)

    def kill_postgres(self) -> None:
        """kill -9 of the postmaster (its backends notice and exit)."""
        pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)

    def start_redis(self) -> None:
        self.redis = embedded.start_redis(self.redis_dir)

    def kill_redis(self) -> None:
        assert self.redis is not None
        self.redis.kill()
        self.redis.wait(timeout=10)

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, *argv] if argv[0] == "-m" else argv,
                cwd=BASE_DIR,
                env=self.child_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs[name] = proc
        return proc

    def start_web(self) -> None:
        self.spawn("web", web_command(self.port))
        wait_until("web healthy", lambda: healthy(self.base_url), timeout=90, every=0.2)

    def start_worker(self) -> None:
        self.spawn("worker", worker_command("realtime", "2"))

    def kill_worker(self) -> None:
        """kill -9 of the worker and its pool, mid-task."""
        os.killpg(self.procs["worker"].pid, signal.SIGKILL)
        self.procs["worker"].wait(timeout=10)

    def stop(self) -> None:
        for proc in reversed(list(self.procs.values())):
            stop(proc)
        if self.redis is not None and self.redis.poll() is None:
            self.redis.kill()
            self.redis.wait(timeout=10)
        with contextlib.suppress(Exception):
            embedded.stop_postgres(self.pgdata)
        self.google.stop()
        self.graph.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # --- traffic ----------------------------------------------------------------------------
    def post(self, wamid: str, wa_id: str, *, timeout: float = 15) -> tuple[int, float]:
        body = text_webhook(
            number=NUMBER, wa_id=wa_id, wamid=wamid, text="¿Abren el sábado?", name="José"
        )
        headers = signed_headers(body, secret=APP_SECRET)
        started = time.monotonic()
        try:
            status = requests.post(
                f"{self.base_url}/webhooks/whatsapp",
                data=body,
                headers=headers,
                timeout=timeout,
            ).status_code
        except requests.RequestException:
            status = 0
        return status, time.monotonic() - started

    def deliver(self, delivery: Delivery, wa_id: str, *, give_up_after: float = 60) -> None:
        """Posts until a 200 (Meta redelivers failed webhooks), half a second apart."""
        deadline = time.monotonic() + give_up_after
        while not delivery.accepted and time.monotonic() < deadline:
            status, seconds = self.post(delivery.wamid, wa_id)
            delivery.statuses.append(status)
            delivery.seconds.append(seconds)
            if status != 200:
                time.sleep(0.5)

    # --- what happened ----------------------------------------------------------------------
    def counts(self, prefix: str, wa_prefix: str) -> dict[str, int]:
        """For the messages whose id starts with `prefix` (customers `wa_prefix`...): stored rows,
        answered (inbound with a result), replies stored, sends at the fake Graph API, and the
        duplicates among all of these."""
        like = prefix + "%"
        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
            stored, distinct, answered = _one(
                conn.execute(
                    "SELECT count(*), count(DISTINCT channel_message_id),"
                    " count(*) FILTER (WHERE metadata ? 'result')"
                    " FROM ai_agents_message WHERE role = 'user' AND channel_message_id LIKE %s",
                    [like],
                )
            )
            replies, replied_to, max_replies = _one(
                conn.execute(
                    "SELECT coalesce(sum(n), 0), count(*), coalesce(max(n), 0) FROM ("
                    "  SELECT r.reply_to_id, count(*) AS n FROM ai_agents_message r"
                    "  JOIN ai_agents_message u ON u.id = r.reply_to_id"
                    "  WHERE r.role = 'assistant' AND u.channel_message_id LIKE %s"
                    "  GROUP BY r.reply_to_id) per_inbound",
                    [like],
                )
            )
        sends = [
            to
            for s in self.graph.sent
            if (to := str(s.get("to", "")).lstrip("+")).startswith(wa_prefix)
        ]
        return {
            "stored": stored,
            "answered": answered,
            "replies": replies,
            "sends": len(sends),
            "duplicated": (stored - distinct)
            + (replies - replied_to)
            + (len(sends) - len(set(sends))),
            "max_replies_per_message": max_replies,
        }

    def wait_answered(
        self, prefix: str, wa_prefix: str, expected: int, timeout: float = 90
    ) -> dict[str, int]:
        last: dict[str, int] = {}

        def done() -> dict[str, int] | None:
            found = self.counts(prefix, wa_prefix)
            last.update(found)
            return found if found["answered"] >= expected and found["sends"] >= expected else None

        try:
            wait_until(f"{expected} messages {prefix}* answered and sent", done, timeout, every=0.5)
        except AssertionError as error:  # say how far it got, and what the worker said
            raise AssertionError(f"{error}; last counts {last}\n{self.log('worker')}") from None
        # Anything extra (a second reply, a second send) would show up now.
        time.sleep(SWEEP_SECONDS * 2)
        return self.counts(prefix, wa_prefix)

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    @staticmethod
    def slowest(deliveries: list[Delivery]) -> float:
        return max((t for d in deliveries for t in d.seconds), default=0.0)

    def summary(self, scenario: str, deliveries: list[Delivery], found: dict[str, Any]) -> str:
        accepted = sum(d.accepted for d in deliveries)
        first_try = sum(d.statuses[:1] == [200] for d in deliveries)
        line = (
            f"[fault] {scenario}: posted {len(deliveries)}, accepted {accepted} "
            f"({first_try} at the first try), stored {found['stored']}, answered "
            f"{found['answered']}, sent {found['sends']}, duplicated {found['duplicated']}; "
            f"slowest webhook answer {self.slowest(deliveries):.2f} s"
        )
        print(line)
        return line
