"""Faults on a real stack (its own PostgreSQL and valkey, the web server and workers of
`make run`, beat): signed WhatsApp webhooks keep arriving while the broker dies, a worker dies
mid-answer. Every message acknowledged is stored once and answered
once; the counts are printed (`-s`) as "[fault] ..." lines."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from erp.testing.fault_stack import Delivery, FaultStack
from erp.testing.processes import BASE_DIR, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def stack() -> Iterator[FaultStack]:
    started = FaultStack(BASE_DIR / "var" / f"faults-{os.getpid()}").start()
    try:
        yield started
    finally:
        started.stop()


def send(
    stack: FaultStack, scenario: str, code: str, n: int, every: float, fault_at: int, fault
) -> list[Delivery]:  # type: ignore[no-untyped-def]
    """Delivers `n` messages from `n` customers, one every `every` s, each in its own thread
    (redelivered until 200); calls `fault()` after message `fault_at` went out."""
    deliveries = [Delivery(f"wamid.{scenario}-{i:04d}") for i in range(n)]
    threads = []
    for i, delivery in enumerate(deliveries):
        thread = threading.Thread(target=stack.deliver, args=(delivery, f"34{code}{i:06d}"))
        thread.start()
        threads.append(thread)
        if i == fault_at:
            fault()
        time.sleep(every)
    for thread in threads:
        thread.join(timeout=90)
        assert not thread.is_alive()
    return deliveries


def test_broker_killed_during_webhooks(stack: FaultStack) -> None:
    def fault() -> None:
        stack.kill_redis()
        time.sleep(2)
        stack.start_redis()

    deliveries = send(stack, "broker", "61", n=30, every=0.1, fault_at=9, fault=fault)
    found = stack.wait_answered("wamid.broker-", "3461", 30)
    stack.summary("broker killed -9 for 2 s during 30 webhooks", deliveries, found)
    assert all(d.accepted for d in deliveries)
    assert found["stored"] == found["answered"] == found["sends"] == 30
    assert found["duplicated"] == 0


def test_worker_killed_mid_answer(stack: FaultStack) -> None:
    stack.google.default = stack.google.reply_json(
        {"action": "respond", "answer": "Sí, de 9 a 14.", "confidence": 0.9}, delay=1.5
    )
    calls_before = len(stack.google.generate_requests)

    def fault() -> None:
        wait_until(
            "the worker is calling the model",
            lambda: len(stack.google.generate_requests) > calls_before,
            timeout=30,
        )
        stack.kill_worker()
        stack.start_worker()

    try:
        deliveries = send(stack, "worker", "62", n=10, every=0.05, fault_at=5, fault=fault)
        found = stack.wait_answered("wamid.worker-", "3462", 10)
    finally:
        stack.google.default = stack.google.reply_json(
            {"action": "respond", "answer": "Abrimos a las 8.", "confidence": 0.9}
        )
    stack.summary("worker killed -9 mid-answer, 10 webhooks", deliveries, found)
    assert all(d.statuses == [200] for d in deliveries)
    assert found["stored"] == found["answered"] == found["sends"] == 10
    assert found["duplicated"] == 0
