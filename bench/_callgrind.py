"""Instructions counted by valgrind's callgrind: a bench's `--instructions`.

CPU times move with the machine (on a shared 2-core VM the same tree's figures differ by up to
2x between runs), which hides a 10 % change. The number of instructions a piece of code runs
does not: `rerun` starts the bench again under callgrind with counting off, the bench turns it
on around what it measures (`counted()`: `callgrind_control -i on|off`, answered before it
returns), and `rerun` prints the instructions per unit for the whole process and for the thread
that ran the measured code. Counting slows the counted code ~50x; the rest runs ~4x slower.
Run to run the figures repeat within a few tenths of a percent (threads that wake on timers,
such as a pool's, count in the process's figure only).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV = "BENCH_CALLGRIND"


def active() -> bool:
    """Whether this process is the bench run again under callgrind by `rerun`."""
    return bool(os.environ.get(ENV))


@contextlib.contextmanager
def counted() -> Iterator[None]:
    """Counts the instructions run inside the block (under `rerun`; otherwise nothing)."""
    if not active():
        yield
        return
    _control("on")
    try:
        yield
    finally:
        _control("off")


def _control(state: str) -> None:
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())],
        check=True,
        capture_output=True,
        timeout=120,
    )


def rerun(units: int, unit: str) -> int:
    """Runs this bench again under callgrind (same arguments) and prints the instructions
    counted per `unit` (`units` of them were counted). The exit code is the run's."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("--instructions needs valgrind (Debian: apt-get install valgrind)")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as folder:
        out = Path(folder)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--separate-threads=yes",
            f"--log-file={out / 'valgrind.log'}",
            f"--callgrind-out-file={out / 'cg'}",
            sys.executable,
            *sys.argv,
        ]
        env = {**os.environ, ENV: "1", "PYTHONHASHSEED": "0"}
        code = subprocess.run(command, env=env, check=False).returncode
        threads = _thread_totals(out)
    if code != 0 or not threads:
        print(f"the run under callgrind failed (exit code {code})")
        return code or 1
    process = sum(threads.values())
    first = threads.get(1, 0)  # the main thread: the one that runs the measured code
    print(
        f"instructions per {unit} (callgrind, {units} counted): process"
        f" {process / max(units, 1) / 1e6:8.3f} M, main thread {first / max(units, 1) / 1e6:8.3f} M"
        f" ({len(threads)} threads ran counted code)"
    )
    return 0


def _thread_totals(out: Path) -> dict[int, int]:
    """{thread number: instructions counted}, from callgrind's files `cg-<thread>`."""
    totals: dict[int, int] = {}
    for path in out.glob("cg-*"):
        match = re.search(r"^totals:\s*(\d+)", path.read_text(errors="replace"), re.MULTILINE)
        if match and int(match.group(1)):
            totals[int(path.name.rsplit("-", 1)[1])] = int(match.group(1))
    return totals
