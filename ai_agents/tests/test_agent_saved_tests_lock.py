"""One run of an agent's saved tests at a time, even when a queued run waited in the bulk
queue longer than the agent's lock lasts: the worker takes the agent again as it starts the
run, so a second "Ejecutar todas" meanwhile is refused instead of running the cases (and
spending the tokens) twice and marking the first run failed while it goes on."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Agent, AgentTestRun
from ai_agents.tests.test_agent_playground_api import offline_agent
from ai_agents.tests.test_agent_saved_tests import PRICE, _add
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
