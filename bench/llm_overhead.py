"""The LLM gateway's own time per call, against a fake Google API that answers at once.

    .venv/bin/python bench/llm_overhead.py [--calls 300] [--smoke]

Overhead = the time `llm_generate` / `llm_stream` takes minus the time spent inside the
provider (google-genai SDK + HTTP to the fake), measured per call by timing the provider's
methods from inside. It covers provider lookup, the credit check, retry bookkeeping and the
usage-ledger write (one INSERT + one UPDATE in a transaction). Reported with the ledger and
with the ledger stubbed out, plus the provider-only time for scale.

Uses the server of DATABASE_URL, or the embedded PostgreSQL under var/ (started by the
settings), with a scratch database of its own (created, migrated, dropped at the end:
`_harness.scratch_database`). `--smoke`: a few calls (CI).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import percentile, scratch_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")

import django

django.setup()

from django.test.utils import override_settings  # noqa: E402

from erp.llm import gateway, usage  # noqa: E402
from erp.llm.providers.google import GoogleProvider  # noqa: E402
from erp.llm.types import LlmRequest, LlmResult, Message  # noqa: E402
from erp.tenancy.models import Tenant  # noqa: E402
from erp.testing.fake_google import FakeGoogle  # noqa: E402

inner: list[float] = []  # seconds spent inside the provider, per call


def _timed_generate(original: Callable[..., LlmResult]) -> Callable[..., LlmResult]:
    def generate(self: GoogleProvider, request: LlmRequest) -> LlmResult:
        started = time.perf_counter()
        try:
            return original(self, request)
        finally:
            inner.append(time.perf_counter() - started)

    return generate


def _timed_stream(original: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    def stream(self: GoogleProvider, request: LlmRequest) -> Iterator[Any]:
        spent = 0.0
        events = original(self, request)
        try:
            while True:
                started = time.perf_counter()
                try:
                    event = next(events)
                except StopIteration:
                    spent += time.perf_counter() - started
                    return
                spent += time.perf_counter() - started
                yield event
        finally:
            inner.append(spent)

    return stream


def _serve_fake(conn: Any) -> None:
    """The fake runs in its own process so its threads do not compete for our GIL."""
    fake = FakeGoogle().start()
    fake.default = fake.reply('{"action": "respond", "answer": "hola"}', chunks=3)
    conn.send(fake.url)
    conn.recv()  # until the parent says stop
    fake.stop()


def measure(label: str, call: Callable[[], None], calls: int, *, direct: bool = False) -> None:
    for _ in range(20):  # warm up: connections, caches, imports
        call()
    totals: list[float] = []
    inner.clear()
    for _ in range(calls):
        started = time.perf_counter()
        call()
        totals.append(time.perf_counter() - started)
    if direct:
        ms = [t * 1000 for t in totals]
        print(
            f"{label:44s} total     median {statistics.median(ms):6.2f} ms"
            f"  P95 {percentile(ms, 0.95):6.2f} ms"
        )
        return
    overhead = [(t - i) * 1000 for t, i in zip(totals, inner, strict=True)]
    print(
        f"{label:44s} overhead  median {statistics.median(overhead):6.2f} ms"
        f"  P95 {percentile(overhead, 0.95):6.2f} ms"
        f"  (total median {statistics.median(totals) * 1000:.2f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="a few calls, seconds (CI)")
    args = parser.parse_args()
    with scratch_database("bench_llm"):
        run(calls=5 if args.smoke else args.calls)


def run(*, calls: int) -> None:
    tenant = Tenant.objects.create(
        slug="bench-llm", name="Bench LLM", ai_credit_balance_usd=100_000
    )
    parent_end, child_end = multiprocessing.Pipe()
    server = multiprocessing.get_context("fork").Process(target=_serve_fake, args=(child_end,))
    server.start()
    fake_url = parent_end.recv()
    request = LlmRequest(messages=[Message("user", "hola")], system="Eres un bot.")
    context = gateway.CallContext(tenant=tenant)
    provider_settings = {
        "GOOGLE_AI_BASE_URL": fake_url,
        "GOOGLE_AI_API_KEY": "bench-key",
        "AI_CREDITS_MODE": "enforce",
    }
    original_generate, original_stream = GoogleProvider.generate, GoogleProvider.stream
    try:
        with override_settings(**provider_settings):
            provider = GoogleProvider.from_settings()
            print(f"{calls} calls each; fake Google API at {fake_url}")
            measure(
                "provider.generate alone (SDK + HTTP)",
                lambda: provider.generate(request),
                calls,
                direct=True,
            )
            measure(
                "provider.stream alone (SDK + HTTP)",
                lambda: list(provider.stream(request)),
                calls,
                direct=True,
            )
            GoogleProvider.generate = _timed_generate(original_generate)  # type: ignore[method-assign]
            GoogleProvider.stream = _timed_stream(original_stream)  # type: ignore[method-assign]

            paid = LlmRequest(
                messages=request.messages, system=request.system, model="gemini-2.5-flash"
            )

            def generate(req: LlmRequest = request) -> None:
                gateway.llm_generate(req, context=context)

            def stream(req: LlmRequest = request) -> None:
                for _event in gateway.llm_stream(req, context=context):
                    pass

            measure("llm_generate, ledger (free model, no debit)", generate, calls)
            measure("llm_stream, ledger (free model, no debit)", stream, calls)
            measure("llm_generate, ledger + debit (priced model)", lambda: generate(paid), calls)
            measure("llm_stream, ledger + debit (priced model)", lambda: stream(paid), calls)
            real_record, real_ensure = usage.usage_record, usage.credits_ensure
            usage.usage_record = lambda **kw: None  # type: ignore[assignment]
            usage.credits_ensure = lambda **kw: None  # type: ignore[assignment]
            try:
                measure("llm_generate, ledger and credit check off", generate, calls)
                measure("llm_stream, ledger and credit check off", stream, calls)
            finally:
                usage.usage_record, usage.credits_ensure = real_record, real_ensure
    finally:
        GoogleProvider.generate, GoogleProvider.stream = original_generate, original_stream  # type: ignore[method-assign]
        parent_end.send("stop")
        server.join(timeout=5)


if __name__ == "__main__":
    main()
