"""Drive `make run` (the supervisor) from tests and benchmarks: start, wait, measure, stop."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests

BASE_DIR = Path(__file__).resolve().parents[2]


@dataclass
class RunningStack:
    proc: subprocess.Popen[str]
    port: int
    data_dir: Path
    lines: list[str] = field(default_factory=list)
    seconds_to_healthy: float = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def processes(self) -> list[psutil.Process]:
        """Every process of the stack: the supervisor's tree plus PostgreSQL and valkey."""
        found: dict[int, psutil.Process] = {}
        try:
            root = psutil.Process(self.proc.pid)
            for p in [root, *root.children(recursive=True)]:
                found[p.pid] = p
        except psutil.NoSuchProcess:
            pass
        for p in stack_leftovers(self.data_dir, self.port):
            found[p.pid] = p
        return list(found.values())

    def rss_mb(self) -> float:
        total = 0
        for p in self.processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                total += p.memory_info().rss
        return total / (1024 * 1024)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


def stack_leftovers(data_dir: Path, port: int) -> list[psutil.Process]:
    """Processes that belong to a stack using `data_dir` or serving on `port`."""
    marker = str(data_dir)
    left = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if p.pid == os.getpid():
            continue
        if marker in cmdline or f"--port {port}" in cmdline:
            left.append(p)
    # Postgres backends only show "postgres: ..." in their cmdline: find them by parent.
    for p in list(left):
        with contextlib.suppress(psutil.NoSuchProcess):
            left.extend(p.children(recursive=True))
    return left


def start_stack(data_dir: Path, port: int, *, timeout: float = 180) -> RunningStack:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(ERP_DATA_DIR=str(data_dir), PORT=str(port), PYTHONUNBUFFERED="1")
    env.pop("ERP_TESTING", None)
    env.pop("DB_POOL_MAX_SIZE", None)  # the stack runs with the production pool
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "erp.supervisor"],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    stack = RunningStack(proc=proc, port=port, data_dir=data_dir)
    reader = threading.Thread(target=_read_lines, args=(proc, stack.lines), daemon=True)
    reader.start()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("make run exited early:\n" + "\n".join(stack.lines))
        try:
            healthy = requests.get(f"{stack.base_url}/healthz", timeout=1).status_code == 200
            if healthy and not stack.seconds_to_healthy:
                stack.seconds_to_healthy = time.monotonic() - started
            if healthy and any("Ctrl-C" in line for line in stack.lines):
                return stack
        except requests.RequestException:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("make run did not become healthy:\n" + "\n".join(stack.lines))


def _read_lines(proc: subprocess.Popen[str], sink: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        sink.append(line.rstrip("\n"))
