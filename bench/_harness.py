"""What the benches share (run as scripts: `bench/` is on sys.path, so `import _harness`)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """The value at fraction `q` (0..1) of the sorted values (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, so a bench killed by `timeout` still cleans up."""

    def handler(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
