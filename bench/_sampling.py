"""What a bench samples while a stack runs: PostgreSQL connections and process-tree memory
(`import _sampling`, like `_harness`)."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def tree_rss_mb(pids: list[int]) -> float:
    """RSS of these processes and all their descendants, in MB (each process counted once)."""
    import psutil

    seen: dict[int, Any] = {}
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(pid)
            for p in [root, *root.children(recursive=True)]:
                seen[p.pid] = p
    total = 0
    for p in seen.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / (1024 * 1024)


def postgres_pids(pgdata: Path) -> list[int]:
    """The PostgreSQL server of this data directory (its backends are its children)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if "-D" in argv and str(pgdata) in " ".join(argv):
            found.append(p.pid)
    return found


@dataclass
class Sampler:
    """Until stopped, every `every` seconds: the connections of `role` to database `db_name`
    (the most in use, i.e. not idle, and the most open, read from pg_stat_activity through
    `admin_url`), and every `rss_every` seconds the RSS of the tree under `pid` (its peak)."""

    admin_url: str
    role: str
    db_name: str
    pid: int
    every: float = 0.05
    rss_every: float = 0.25  # walking the process tree costs more than the query
    max_in_use: int = 0
    max_open: int = 0
    peak_rss_mb: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        import psycopg

        query = (
            "SELECT count(*) FILTER (WHERE state IS DISTINCT FROM 'idle'), count(*) "
            "FROM pg_stat_activity WHERE usename = %s AND datname = %s"
        )
        rss_next = 0.0
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            while not self._stop.is_set():
                row = conn.execute(query, (self.role, self.db_name)).fetchone() or (0, 0)
                self.max_in_use = max(self.max_in_use, int(row[0]))
                self.max_open = max(self.max_open, int(row[1]))
                if time.monotonic() >= rss_next:
                    rss_next = time.monotonic() + self.rss_every
                    self.peak_rss_mb = max(self.peak_rss_mb, tree_rss_mb([self.pid]))
                self._stop.wait(self.every)
