"""Real server processes for tests: `make run`'s uvicorn on the test database, with deadlines."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import requests

BASE_DIR = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_until(what: str, predicate: Callable[[], T], timeout: float, every: float = 0.05) -> T:
    """Polls `predicate` until it returns something truthy; AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)


def healthy(base_url: str, timeout: float = 1.0) -> bool:
    with contextlib.suppress(requests.RequestException):
        return requests.get(f"{base_url}/healthz", timeout=timeout).status_code == 200
    return False


@contextlib.contextmanager
def process(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A child in a session of its own (its prefork pool too), stopped and reaped at exit."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=BASE_DIR,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # what is left of its group (pool children)
