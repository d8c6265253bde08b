"""A queued "Ejecutar todas" runs on the bulk queue in slices, so it never holds the bulk
worker (one task at a time by default) for its whole 20 minutes: an upload's indexing queued
meanwhile waits for one slice, not for the run.

A slice starts no case past AGENT_TESTS_SLICE_SECONDS (20 s: a document waits about that plus
one answer; a run of 50 fast cases takes a few slices, not 50 messages) and runs one at least,
then queues the next slice, numbered, under the stable task name. A slice runs only while it
holds its claim (a cache key per run and number, added atomically, with a lease that outlasts
the slice: SLICE_SECONDS + one case's budget + a margin) and only if its number is the run's
cursor (the next slice due), so two slices of one run never go at once and a message delivered
twice runs once. The slice moves the cursor, then queues the next one, then marks its claim
done; a worker killed anywhere in between leaves its message unacknowledged (acks_late,
reject_on_worker_lost) and the redelivery finds its way:
- killed while running cases: the claim is still held, so the redelivery comes back when the
  lease ends and goes on from the cases saved;
- killed after moving the cursor: it queues the next slice again (the spare one is stale).
A message that finds its claim held waits for the lease to end the same way (a live slice
marks it done by then, and the message is dropped). Lost altogether (the broker lost it): the
agent's lock and the page let go after RUN_LOCK_S, as for any lost run.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache

from ai_agents.models import AgentTestRun
from ai_agents.services import agent_tests
from erp.celery import enqueue

TASK = "ai_agents.bulk_agent_tests_run"
LEASE_MARGIN_S = agent_tests.SLICE_MARGIN_S
SLICE_SOFT_S = agent_tests.SLICE_SOFT_S  # a slice's own time limit (the task's)
SLICE_HARD_S = SLICE_SOFT_S + 30
_DONE = "done"
State = AgentTestRun.State


def _claim_key(run: AgentTestRun, number: int) -> str:
    return f"agent-tests-slice:{run.pk}:{number}"


def _cursor_key(run: AgentTestRun) -> str:
    return f"agent-tests-next:{run.pk}"


def agent_test_run_slice(*, run: AgentTestRun, number: int, started: float | None) -> str:
    """One delivery of slice `number` of the run (`started`: time.time() at its first slice,
    None for the first). Returns what it did: "ran", "wait" (queued again for when the claim's
    lease ends), "stale" (ran already) or "over" (the run is done or failed)."""
    if run.state not in (State.QUEUED, State.RUNNING):
        return "over"
    claim = _claim_key(run, number)
    lease = settings.AGENT_TESTS_SLICE_SECONDS + agent_tests.case_budget_s(run.agent)
    lease += LEASE_MARGIN_S
    if not cache.add(claim, time.time() + lease, lease):
        held = cache.get(claim)
        if held == _DONE:
            return "stale"
        wait = max(1.0, float(held or 0) - time.time())  # a live slice or a dead one's lease
        _enqueue(run, number, started, countdown=wait)
        return "wait"
    cursor = cache.get(_cursor_key(run), 0)
    if number != cursor:
        if number == cursor - 1:  # it moved the cursor and stopped, maybe before queuing
            _enqueue(run, cursor, started)
        cache.set(claim, _DONE, agent_tests.RUN_LOCK_S)
        return "stale"
    started = time.time() if started is None else started
    over = agent_tests.agent_test_run_work(
        run=run,
        first=number == 0,
        until=time.monotonic() + settings.AGENT_TESTS_SLICE_SECONDS,
        deadline=started + agent_tests.RUN_SOFT_S,
    )
    if not over:
        cache.set(_cursor_key(run), number + 1, agent_tests.RUN_LOCK_S)
        _enqueue(run, number + 1, started)
    cache.set(claim, _DONE, agent_tests.RUN_LOCK_S)
    return "ran"


def _enqueue(
    run: AgentTestRun, number: int, started: float | None, *, countdown: float | None = None
) -> None:
    try:
        enqueue(TASK, str(run.pk), number, started, countdown=countdown)
    except Exception:
        agent_tests.run_enqueue_failed(run)
