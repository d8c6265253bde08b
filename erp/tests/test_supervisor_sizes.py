"""How `make run` sizes its real-time worker (threads) from the environment."""

from __future__ import annotations

import pytest

from erp.supervisor import REALTIME_THREADS, realtime_threads, worker_command


@pytest.mark.parametrize(
    ("env", "threads"),
    [
        ({}, REALTIME_THREADS),
        ({"CELERY_WORKER_CONCURRENCY": "6"}, "6"),  # its earlier name still counts
        ({"CELERY_REALTIME_CONCURRENCY": "40", "CELERY_WORKER_CONCURRENCY": "6"}, "40"),
    ],
)
def test_the_real_time_worker_gets_its_threads_from_the_environment(env, threads):
    assert realtime_threads(env) == threads


def test_the_real_time_worker_runs_threads_and_the_bulk_worker_processes():
    realtime = worker_command("realtime", "40", pool="threads")
    bulk = worker_command("bulk", "1")

    assert realtime[realtime.index("-P") + 1] == "threads"
    assert realtime[realtime.index("-c") + 1] == "40"
    assert bulk[bulk.index("-P") + 1] == "prefork"
