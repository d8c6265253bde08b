"""One run of an agent's saved tests at a time, even when a queued run waited in the bulk
queue longer than the agent's lock lasts: the worker takes the agent again as it starts the
run, so a second "Ejecutar todas" meanwhile is refused instead of running the cases (and
spending the tokens) twice and marking the first run failed while it goes on."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Agent, AgentTestRun
from ai_agents.tests.test_agent_playground_api import offline_agent
from ai_agents.tests.test_agent_saved_tests import CAKE, PRICE, REFUND_CASE, _add
from erp.tenancy.models import Tenant

pytestmark = pytest.mark.django_db


def test_a_run_that_waited_past_the_lock_takes_the_agent_again_when_it_starts(
    api_a: Any,
    tenant_a: Tenant,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.core.cache import cache

    from ai_agents.services import agent_tests
    from erp.celery import app

    agent_id = offline_agent(api_a, tenant_a)
    _add(api_a, agent_id, PRICE)
    url = f"/api/v1/agents/{agent_id}/tests"
    with django_capture_on_commit_callbacks() as queued_tasks:  # no worker free yet
        queued = api_a.post(f"{url}/run").json()
    # The bulk queue was busy for longer than RUN_LOCK_S: the lock expired meanwhile.
    cache.delete(agent_tests.run_lock_key(Agent.objects.for_tenant(tenant_a).get(pk=agent_id)))
    real = agent_tests.agent_playground
    clicked: list[Any] = []

    def playground(**kwargs: Any) -> Any:
        if not clicked:  # while the worker runs the first case, someone clicks again
            clicked.append(api_a.post(f"{url}/run"))
        return real(**kwargs)

    monkeypatch.setattr(agent_tests, "agent_playground", playground)
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        for callback in queued_tasks:
            callback()
    finally:
        app.conf.task_always_eager = previous

    assert clicked[0].status_code == 409
    assert clicked[0].json()["error"]["code"] == "run_in_progress"
    run = api_a.get(f"{url}/runs/{queued['id']}").json()
    assert (run["state"], run["error"], run["passed"]) == ("done", "", 1)
    assert AgentTestRun.objects.for_tenant(tenant_a).count() == 1


# --- slices: "Ejecutar todas" goes on the bulk queue a slice at a time -----------------------


class BulkQueue:
    """The bulk queue as a list (`sent`: each message's args and countdown) and a worker that
    takes a message when told (`deliver`)."""

    def __init__(self, api: Any, agent_id: str, cases: list[dict[str, Any]]) -> None:
        self.api, self.agent_id, self.cases = api, agent_id, cases
        self.run_id = ""
        self.sent: list[tuple[tuple[Any, ...], float | None]] = []
        self.asked: list[str] = []  # the questions the playground was asked, in order
        self.on_case: dict[int, Any] = {}  # the n-th question asked -> what happens meanwhile
        self.broken: BaseException | None = None  # raised by the next send

    def send(self, name: str, *args: Any, countdown: float | None = None) -> None:
        if self.broken is not None:
            raise self.broken
        self.sent.append((args, countdown))

    def deliver(self, args: tuple[Any, ...]) -> str:
        from ai_agents.tasks import bulk_agent_tests_run

        return str(bulk_agent_tests_run(*args))

    @property
    def first(self) -> tuple[str]:
        return (self.run_id,)  # the message the page queued

    def run(self) -> dict[str, Any]:
        url = f"/api/v1/agents/{self.agent_id}/tests/runs/{self.run_id}"
        return dict(self.api.get(url).json())


@pytest.fixture
def slices(
    api_a: Any,
    tenant_a: Tenant,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> BulkQueue:
    """An agent with three saved tests and its run queued on a `BulkQueue`. A slice runs one
    test (AGENT_TESTS_SLICE_SECONDS = 0)."""
    from ai_agents.services import agent_test_slices, agent_tests

    settings.AGENT_TESTS_SLICE_SECONDS = 0
    agent_id = offline_agent(api_a, tenant_a)
    queue = BulkQueue(
        api_a, agent_id, [_add(api_a, agent_id, case) for case in (PRICE, REFUND_CASE, CAKE)]
    )
    real = agent_tests.agent_playground

    def playground(**kwargs: Any) -> Any:
        queue.asked.append(kwargs["text"])
        hook = queue.on_case.pop(len(queue.asked), None)
        if hook is not None:
            hook()
        return real(**kwargs)

    monkeypatch.setattr(agent_tests, "agent_playground", playground)
    monkeypatch.setattr(agent_test_slices, "enqueue", queue.send)
    monkeypatch.setattr(agent_tests, "enqueue", queue.send)
    with django_capture_on_commit_callbacks(execute=True):
        queue.run_id = api_a.post(f"/api/v1/agents/{agent_id}/tests/run").json()["id"]
    assert queue.sent == [(queue.first, None)]
    queue.sent.clear()
    return queue


def test_a_run_goes_a_slice_at_a_time_and_a_message_delivered_twice_runs_once(
    api_a: Any, tenant_a: Tenant, slices: BulkQueue
) -> None:
    from ai_agents.services.agent_tests import RUN_LOCK_S

    assert slices.deliver(slices.first) == "ran"
    ((second, wait),) = slices.sent
    assert wait is None and second[:2] == (slices.run_id, 1)
    run = slices.run()
    assert (run["state"], run["cases_done"], run["cases_total"]) == ("running", 1, 3)
    url = f"/api/v1/agents/{slices.agent_id}/tests"
    assert api_a.post(f"{url}/run").status_code == 409  # the agent stays taken between slices
    assert api_a.get(url).json()["current_run"]["id"] == slices.run_id

    assert slices.deliver(slices.first) == "stale"  # delivered again: nothing more runs
    seen: list[str] = []
    # While slice 1 asks its question, its message is delivered to a second worker too.
    slices.on_case[2] = lambda: seen.append(slices.deliver(second))
    slices.sent.clear()
    assert slices.deliver(second) == "ran"
    assert seen == ["wait"]  # never two slices of one run at once: it comes back later
    (again, countdown), (third, _) = slices.sent
    assert again == second and countdown is not None and 1 < countdown <= RUN_LOCK_S
    assert slices.deliver(again) == "stale"  # by then the slice was done
    assert third[:2] == (slices.run_id, 2) and third[2] == second[2]  # the run's start kept

    assert slices.deliver(third) == "ran"
    run = slices.run()
    assert (run["state"], run["passed"], run["failed"], run["cases_done"]) == ("done", 3, 0, 3)
    assert slices.asked == [PRICE["question"], REFUND_CASE["question"], CAKE["question"]]
    assert slices.deliver(third) == "over"
    assert api_a.post(f"{url}/run").status_code == 202  # the agent is free again


class Killed(BaseException):
    """The worker's process is killed (hard time limit, out of memory): nothing after runs."""


def test_a_slice_whose_worker_died_is_taken_again_from_the_tests_saved(slices: BulkQueue) -> None:
    def kill() -> None:
        raise Killed()

    assert slices.deliver(slices.first) == "ran"
    ((second, _),) = slices.sent
    slices.sent.clear()
    slices.on_case[2] = kill  # slice 1 dies while asking the second question
    with pytest.raises(Killed):
        slices.deliver(second)
    assert (slices.run()["state"], slices.run()["cases_done"]) == ("running", 1)
    assert slices.deliver(second) == "wait"  # redelivered at once: the claim's lease holds
    ((again, countdown),) = slices.sent
    assert again == second and countdown is not None and countdown > 1

    _lease_end(slices.run_id, 1)
    slices.broken = Killed()  # this time it dies after moving the run on, before queuing
    with pytest.raises(Killed):
        slices.deliver(second)
    assert slices.run()["cases_done"] == 2  # the test that did not end, asked again
    slices.broken = None
    slices.sent.clear()
    _lease_end(slices.run_id, 1)
    assert slices.deliver(second) == "stale"  # it ran: only the next slice is queued again
    ((third, _),) = slices.sent
    assert third == (slices.run_id, 2, second[2])

    assert slices.deliver(third) == "ran"
    run = slices.run()
    assert (run["state"], run["cases_done"], run["passed"], run["error"]) == ("done", 3, 3, "")
    assert [r["id"] for r in run["results"]] == [c["id"] for c in slices.cases]
    # The question in flight when the worker died is asked again; none other is.
    assert slices.asked == [
        PRICE["question"],
        REFUND_CASE["question"],
        REFUND_CASE["question"],
        CAKE["question"],
    ]


def test_a_run_past_its_20_minutes_fails_at_its_next_slice(slices: BulkQueue) -> None:
    from ai_agents.services.agent_tests import RUN_SOFT_S

    assert slices.deliver(slices.first) == "ran"
    ((second, _),) = slices.sent
    slices.sent.clear()
    assert slices.deliver((slices.run_id, 1, second[2] - RUN_SOFT_S)) == "ran"
    run = slices.run()
    assert (run["state"], run["cases_done"]) == ("failed", 1)
    assert "superaron el tiempo máximo (20 min)" in run["error"]
    assert slices.sent == [] and slices.deliver(second) == "over"


def _lease_end(run_id: str, number: int) -> None:
    """The lease of a slice's claim runs out (what a dead worker's leaves behind)."""
    from django.core.cache import cache

    cache.delete(f"agent-tests-slice:{run_id}:{number}")
