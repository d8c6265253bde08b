"""`make run` start-up and footprint.

Prints: time to first /healthz 200 on a cold start (new data dir) and on a warm start (the
same data dir again), and the total RSS of every process of the stack once idle.
Goals (issue 2): warm start under 10 s, idle RSS under 700 MB.

    .venv/bin/python bench/startup.py [--idle-seconds 10] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from erp.embedded import free_port
from erp.testing.supervised import BASE_DIR, start_stack


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument(
        "--smoke", action="store_true", help="the cold start alone, no idle wait (CI)"
    )
    args = parser.parse_args()
    if args.smoke:
        smoke(args)
        return
    data_dir = BASE_DIR / "var" / f"bench-startup-{os.getpid()}"
    port = free_port()
    try:
        cold = start_stack(data_dir, port)
        cold_s = cold.seconds_to_healthy
        cold.stop(signal.SIGINT)

        warm = start_stack(data_dir, port)
        warm_s = warm.seconds_to_healthy
        time.sleep(args.idle_seconds)
        processes = warm.processes()
        rss = warm.rss_mb()
        warm.stop(signal.SIGINT)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)

    print(f"cold start (new data dir) to first /healthz 200: {cold_s:6.2f} s")
    print(f"warm start to first /healthz 200:                {warm_s:6.2f} s   (goal < 10 s)")
    print(
        f"idle RSS of all {len(processes)} processes after {args.idle_seconds:.0f} s:    "
        f"{rss:6.0f} MB  (goal < 700 MB)"
    )


def smoke(args: argparse.Namespace) -> None:
    """One start of the stack, its RSS, and a clean stop: what the full run does twice."""
    data_dir = BASE_DIR / "var" / f"bench-startup-{os.getpid()}"
    try:
        stack = start_stack(data_dir, free_port())
        rss = stack.rss_mb()
        stack.stop(signal.SIGINT)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"cold start to first /healthz 200: {stack.seconds_to_healthy:6.2f} s; RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
