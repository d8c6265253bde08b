"""Faults on a real stack (its own PostgreSQL and valkey, the web server and workers of
`make run`, beat): signed WhatsApp webhooks keep arriving while the broker dies, a worker dies
mid-answer, the database restarts. Every message acknowledged is stored once and answered
once; the counts are printed (`-s`) as "[fault] ..." lines."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from erp.testing.fault_stack import SWEEP_SECONDS, Delivery, FaultStack
from erp.testing.processes import BASE_DIR, healthy, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def stack() -> Iterator[FaultStack]:
    started = FaultStack(BASE_DIR / "var" / f"faults-{os.getpid()}").start()
    try:
        yield started
    finally:
        started.stop()


def send(
    stack: FaultStack,
    *,
    scenario: str,
    code: str,
    n: int,
    every: float,
    fault_at: int,
    fault: Callable[[], None],
) -> list[Delivery]:
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
    worker, beat = stack.procs["worker"], stack.procs["beat"]
    beat_log = stack.logs / "beat.log"
    restarted_at = {}

    def fault() -> None:
        stack.kill_redis()
        time.sleep(2)
        stack.start_redis()
        restarted_at["beat_log"] = beat_log.stat().st_size

    deliveries = send(stack, scenario="broker", code="61", n=30, every=0.1, fault_at=9, fault=fault)
    found = stack.wait_answered("wamid.broker-", "3461", 30)
    stack.summary("broker killed -9 for 2 s during 30 webhooks", deliveries, found)
    assert all(d.accepted for d in deliveries)
    assert stack.slowest(deliveries) < 5.0  # storing never waits for the broker
    assert found["stored"] == found["answered"] == found["sends"] == 30
    assert found["duplicated"] == 0
    # The same worker and beat lived through it and reconnected: beat sends its sweep again.
    assert worker.poll() is None and beat.poll() is None
    with open(beat_log, "rb") as log:
        log.seek(restarted_at["beat_log"])
        assert b"Sending due task ai-agents-channel-pending-sweep" in log.read()


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
        deliveries = send(
            stack, scenario="worker", code="62", n=10, every=0.05, fault_at=5, fault=fault
        )
        found = stack.wait_answered("wamid.worker-", "3462", 10)
    finally:
        stack.google.default = stack.google.reply_json(
            {"action": "respond", "answer": "Abrimos a las 8.", "confidence": 0.9}
        )
    stack.summary("worker killed -9 mid-answer, 10 webhooks", deliveries, found)
    assert all(d.statuses == [200] for d in deliveries)
    assert found["stored"] == found["answered"] == found["sends"] == 10
    assert found["duplicated"] == 0


def test_worker_killed_mid_burst(stack: FaultStack) -> None:
    """Three messages of one customer 0.3 s apart (one burst: the agent's quiet window is
    2.5 s); the worker is killed -9 inside the window, with the re-check it was holding, and
    started again: the burst is answered once, by one reply."""
    deliveries = [Delivery(f"wamid.burst-{i:04d}") for i in range(3)]
    for delivery in deliveries:
        stack.deliver(delivery, "34640000001")
        time.sleep(0.3)
    stack.kill_worker()
    stack.start_worker()

    def done() -> dict[str, int] | None:
        found = stack.counts("wamid.burst-", "3464")
        return found if found["answered"] >= 3 and found["sends"] >= 1 else None

    wait_until("the burst answered and sent", done, timeout=90, every=0.5)
    time.sleep(SWEEP_SECONDS * 2)  # a second reply would show up now
    found = stack.counts("wamid.burst-", "3464")
    stack.summary("worker killed -9 mid-burst, 3 webhooks of one customer", deliveries, found)
    assert all(d.statuses == [200] for d in deliveries)
    assert (found["stored"], found["answered"]) == (3, 3)
    assert (found["replies"], found["sends"], found["duplicated"]) == (1, 1, 0)


def test_database_restarted_during_webhooks(stack: FaultStack) -> None:
    outage: dict[str, Any] = {}

    def fault() -> None:
        stack.kill_postgres()
        # Down for 6 s while webhooks keep coming (Meta redelivers every half second): /healthz
        # says so within a second, at once and after the pool ran dry; webhooks get a 503.
        healthz = []
        for pause in (0.5, 5.5):
            time.sleep(pause)
            started = time.monotonic()
            status = requests.get(f"{stack.base_url}/healthz", timeout=15).status_code
            healthz.append((status, time.monotonic() - started))
        outage["healthz_statuses"] = sorted({status for status, _ in healthz})
        outage["healthz_seconds"] = max(seconds for _, seconds in healthz)
        restarting = time.monotonic()
        stack.start_postgres()
        outage["up_at"] = time.monotonic()
        outage["restart_s"] = outage["up_at"] - restarting
        wait_until("web healthy again", lambda: healthy(stack.base_url), timeout=60, every=0.05)
        outage["recovered_after"] = time.monotonic() - outage["up_at"]

    deliveries = send(stack, scenario="db", code="63", n=30, every=0.1, fault_at=9, fault=fault)
    found = stack.wait_answered("wamid.db-", "3463", 30)
    stack.summary("PostgreSQL killed -9 and restarted during 30 webhooks", deliveries, found)
    refused = [
        (status, seconds)
        for d in deliveries
        for status, seconds in zip(d.statuses, d.seconds, strict=True)
        if status != 200
    ]
    slowest = max((seconds for _, seconds in refused), default=0.0)
    print(
        f"[fault] database outage: healthz {outage['healthz_statuses']} in at most "
        f"{outage['healthz_seconds']:.2f} s; web healthy {outage['recovered_after']:.2f} s after "
        f"PostgreSQL was back (its restart took {outage['restart_s']:.2f} s); refused webhooks "
        f"{len(refused)}, statuses {sorted({s for s, _ in refused})}, slowest {slowest:.2f} s"
    )
    assert outage["healthz_statuses"] == [503] and outage["healthz_seconds"] < 1.0
    assert outage["recovered_after"] < 2.0
    assert {status for status, _ in refused} <= {503}
    assert slowest < 2.0  # not the pool's 10 s wait
    assert all(d.accepted for d in deliveries)
    assert found["stored"] == found["answered"] == found["sends"] == 30
    assert found["duplicated"] == 0
