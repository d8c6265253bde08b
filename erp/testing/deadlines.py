"""Deadlines for the waits of concurrency tests: a thread that never ends, a barrier one party
never reaches or a condition that never comes true fails the test with a message, instead of
hanging it until pytest-timeout (or forever).

- `threads_join(threads)`: join them all within one deadline, then fail if any is still alive.
- `barrier(parties)`: a `threading.Barrier` whose `wait()` raises `BrokenBarrierError` after
  `WAIT_S` instead of waiting forever.
- `wait_until(predicate, what=...)`: poll until true or fail.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

import pytest

WAIT_S = 30.0


def threads_join(threads: Iterable[threading.Thread], *, timeout: float = WAIT_S) -> None:
    threads = list(threads)
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    alive = [thread.name for thread in threads if thread.is_alive()]
    if alive:
        pytest.fail(f"{len(alive)} thread(s) still running after {timeout} s: {alive}")


def barrier(parties: int, *, timeout: float = WAIT_S) -> threading.Barrier:
    return threading.Barrier(parties, timeout=timeout)


def wait_until(
    predicate: Callable[[], object], *, what: str, timeout: float = WAIT_S, interval: float = 0.01
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(interval)
