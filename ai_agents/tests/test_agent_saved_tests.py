"""Saved tests of an agent through `/api/v1/agents/{id}/tests` and `manage.py agent_test`:
create, edit, delete, "Ejecutar todas" queued (202, the bulk task runs it, the run read back
with its progress) with what changed since the last run (a settings change turns a passing
case into a regression), a run stopped by its time limit, the command's table and exit code,
bad input named, and two tenants (the outsider gets 404 and changes nothing; a member of both
sees each agent's tests only under its tenant)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from ai_agents.models import AgentTestCase, AgentTestRun, Conversation
from ai_agents.tests.conversations.support import create_agent
from ai_agents.tests.test_agent_playground_api import REFUND, offline_agent
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

PRICE = {"question": "¿Cuánto cuesta el envío?", "expectation": "contains", "expected_text": "4,95"}
REFUND_CASE = {"question": "Quiero un reembolso", "expectation": "escalates"}
CAKE = {"question": "¿Hacen pasteles de boda de chocolate?", "expectation": "no_answer"}


def _add(api: Any, agent_id: str, case: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"/api/v1/agents/{agent_id}/tests", case, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def _run(api: Any, run_tasks: Any, agent_id: str) -> dict[str, Any]:
    """ "Ejecutar todas": queued (202), run by the bulk task, read back once done."""
    with run_tasks():
        queued = api.post(f"/api/v1/agents/{agent_id}/tests/run")
        assert queued.status_code == 202, queued.content
        assert (queued.json()["state"], queued.json()["cases_done"]) == ("queued", 0)
    run = api.get(f"/api/v1/agents/{agent_id}/tests/runs/{queued.json()['id']}")
    assert run.status_code == 200
    assert run.json()["state"] == "done"
    assert run.json()["cases_done"] == run.json()["cases_total"]
    return dict(run.json())


def _command(agent_id: str, *options: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("agent_test", agent_id, *options, stdout=out)
    except SystemExit as exit_:
        return int(exit_.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_run_all_shows_what_changed_and_the_command_gates_on_regressions(
    api_a: Any, tenant_a: Tenant, run_tasks: Any
) -> None:
    agent_id = offline_agent(api_a, tenant_a)
    price, refund, cake = (_add(api_a, agent_id, c) for c in (PRICE, REFUND_CASE, CAKE))
    assert refund["expectation_label"] == "pasa a una persona"
    assert price["last_passed"] is None

    first = _run(api_a, run_tasks, agent_id)
    assert first["cases_total"] == 3
    assert (first["passed"], first["failed"], first["regressions"]) == (3, 0, 0)
    assert first["changes"]["first_run"] is True

    # The business drops its refund trigger: that case now fails, a regression.
    patched = api_a.patch(f"/api/v1/agents/{agent_id}", {"escalation_triggers": []}, format="json")
    assert patched.status_code == 200
    second = _run(api_a, run_tasks, agent_id)
    assert (second["passed"], second["failed"], second["regressions"]) == (2, 1, 1)
    assert second["changes"]["config"] == ["settings"]
    assert second["changes"]["cases"] == [refund["id"]]
    failed = next(r for r in second["results"] if r["id"] == refund["id"])
    assert failed["why"] == "No pasó a una persona."
    assert failed["before"] is True and failed["regression"] is True
    listed = api_a.get(f"/api/v1/agents/{agent_id}/tests").json()
    assert [c["last_passed"] for c in listed["results"]] == [True, False, True]
    assert listed["last_run"]["id"] == second["id"]

    code, table = _command(agent_id)  # failed last time too: no longer a regression
    assert code == 0
    assert "Pasan: 2, fallan: 1, regresiones: 0 (3 pruebas)" in table
    assert _command(agent_id, "--strict")[0] == 1

    api_a.patch(f"/api/v1/agents/{agent_id}", {"escalation_triggers": [REFUND]}, format="json")
    assert _command(agent_id)[0] == 0
    api_a.patch(f"/api/v1/agents/{agent_id}", {"escalation_triggers": []}, format="json")
    code, table = _command(agent_id)
    assert code == 1
    assert "REGRESIÓN" in table and "Quiero un reembolso" in table
    assert Conversation.objects.unscoped().count() == 0
    last = AgentTestRun.objects.unscoped().order_by("-ran_at").first()
    assert last is not None
    assert cake["id"] in {r["id"] for r in last.results}


def test_edit_delete_and_bad_input(api_a: Any, tenant_a: Tenant, member_client: Any) -> None:
    agent_id = create_agent(api_a, provider="offline")
    url = f"/api/v1/agents/{agent_id}/tests"
    case = _add(api_a, agent_id, PRICE)

    edited = api_a.patch(f"{url}/{case['id']}", {"expected_text": "48 horas"}, format="json")
    assert edited.status_code == 200
    assert edited.json()["expected_text"] == "48 horas"
    assert edited.json()["question"] == PRICE["question"]

    bad = [
        ({**PRICE, "expectation": "maybe"}, "expectation"),
        ({**PRICE, "expected_text": " "}, "expected_text"),
        ({**PRICE, "question": ""}, "question"),
        ({**PRICE, "question": "x" * 4001}, "question"),
    ]
    for payload, field in bad:
        response = api_a.post(url, payload, format="json")
        assert response.status_code == 400, payload
        assert response.json()["error"]["field"] == field
    assert api_a.patch(f"{url}/{case['id']}", {"expectation": 3}, format="json").status_code == 400
    assert api_a.get(f"{url}/not-a-uuid").status_code == 404
    assert member_client.get(url).status_code == 403
    assert member_client.post(f"{url}/run").status_code == 403
    assert member_client.get(f"{url}/runs/{case['id']}").status_code == 403

    assert api_a.delete(f"{url}/{case['id']}").status_code == 204
    assert AgentTestCase.objects.unscoped().count() == 0


def test_two_tenants_see_each_agents_tests_only_under_their_own(
    api_a: Any, api_b: Any, tenant_a: Tenant, tenant_b: Tenant, run_tasks: Any
) -> None:
    agent_a = offline_agent(api_a, tenant_a)
    agent_b = create_agent(api_b, provider="offline")
    case_a = _add(api_a, agent_a, PRICE)
    case_b = _add(api_b, agent_b, CAKE)

    base = f"/api/v1/agents/{agent_a}/tests"
    assert api_b.get(base).status_code == 404
    assert api_b.post(base, CAKE, format="json").status_code == 404
    assert api_b.post(f"{base}/run").status_code == 404
    assert api_b.delete(f"{base}/{case_a['id']}").status_code == 404
    assert (
        api_b.patch(f"{base}/{case_a['id']}", {"question": "x"}, format="json").status_code == 404
    )
    # B's own agent with A's case id: still 404.
    assert api_b.get(f"/api/v1/agents/{agent_b}/tests/{case_a['id']}").status_code == 404
    assert AgentTestCase.objects.unscoped().get(pk=case_a["id"]).question == PRICE["question"]
    assert AgentTestRun.objects.unscoped().count() == 0

    user: Any = UserFactory(username="both@x.test")
    MembershipFactory.create(tenant=tenant_a, user=user, role=Membership.Role.OWNER)
    MembershipFactory.create(tenant=tenant_b, user=user, role=Membership.Role.ADMIN)
    both = APIClient()
    both.force_login(user)
    for agent_id, case, own, other in (
        (agent_a, case_a, "acme", "globex"),
        (agent_b, case_b, "globex", "acme"),
    ):
        url = f"/api/v1/agents/{agent_id}/tests"
        mine = both.get(url, HTTP_X_TENANT=own).json()
        assert [c["id"] for c in mine["results"]] == [case["id"]]
        assert both.get(url, HTTP_X_TENANT=other).status_code == 404
        assert both.post(f"{url}/run", HTTP_X_TENANT=other).status_code == 404
    assert AgentTestRun.objects.unscoped().count() == 0

    run_a = _run(api_a, run_tasks, agent_a)["id"]
    assert api_b.get(f"{base}/runs/{run_a}").status_code == 404
    assert api_b.get(f"/api/v1/agents/{agent_b}/tests/runs/{run_a}").status_code == 404
    assert both.get(f"{base}/runs/{run_a}", HTTP_X_TENANT="globex").status_code == 404
    assert both.get(f"{base}/runs/{run_a}", HTTP_X_TENANT="acme").json()["passed"] == 1
    assert api_a.get(f"{base}/runs/not-a-uuid").status_code == 404


def test_one_run_per_agent_at_a_time(api_a: Any, tenant_a: Tenant, run_tasks: Any) -> None:
    from django.core.cache import cache
    from django.core.management.base import CommandError

    from ai_agents.models import Agent
    from ai_agents.services.agent_tests import run_lock_key

    agent_id = offline_agent(api_a, tenant_a)
    _add(api_a, agent_id, PRICE)
    key = run_lock_key(Agent.objects.for_tenant(tenant_a).get(pk=agent_id))
    cache.add(key, "1", 60)  # another run of this agent is going on
    try:
        busy = api_a.post(f"/api/v1/agents/{agent_id}/tests/run")
        assert busy.status_code == 409
        assert busy.json()["error"]["code"] == "run_in_progress"
        assert "ya se están ejecutando" in busy.json()["error"]["message"]
        with pytest.raises(CommandError, match="ya se están ejecutando"):
            call_command("agent_test", agent_id)
        assert AgentTestRun.objects.for_tenant(tenant_a).count() == 0
    finally:
        cache.delete(key)
    assert _run(api_a, run_tasks, agent_id)["passed"] == 1
    assert cache.get(key) is None  # a finished run lets the next one in


def test_a_queued_run_holds_the_agent_until_the_worker_ran_it(
    api_a: Any, tenant_a: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    from erp.celery import app

    agent_id = offline_agent(api_a, tenant_a)
    _add(api_a, agent_id, PRICE)
    url = f"/api/v1/agents/{agent_id}/tests"
    with django_capture_on_commit_callbacks() as queued_tasks:  # no worker yet
        queued = api_a.post(f"{url}/run").json()
    listed = api_a.get(url).json()
    assert listed["current_run"]["id"] == queued["id"] and listed["last_run"] is None
    again = api_a.post(f"{url}/run")
    assert again.status_code == 409 and again.json()["error"]["code"] == "run_in_progress"
    assert AgentTestRun.objects.for_tenant(tenant_a).count() == 1

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:  # the worker takes the task (twice: a redelivery runs nothing more)
        for callback in [*queued_tasks, *queued_tasks]:
            callback()
    finally:
        app.conf.task_always_eager = previous
    listed = api_a.get(url).json()
    assert listed["current_run"] is None
    assert listed["last_run"]["id"] == queued["id"] and listed["last_run"]["passed"] == 1
    assert api_a.post(f"{url}/run").status_code == 202  # the agent is free again


def test_a_run_lost_with_its_worker_does_not_hold_the_agent_for_ever(
    api_a: Any, tenant_a: Tenant, run_tasks: Any, django_capture_on_commit_callbacks: Any
) -> None:
    import datetime as dt

    from django.core.cache import cache

    from ai_agents.models import Agent
    from ai_agents.services.agent_tests import run_lock_key

    agent_id = offline_agent(api_a, tenant_a)
    _add(api_a, agent_id, PRICE)
    url = f"/api/v1/agents/{agent_id}/tests"
    with django_capture_on_commit_callbacks():  # queued; its worker dies: the task never ends
        lost = api_a.post(f"{url}/run").json()
    AgentTestRun.objects.for_tenant(tenant_a).filter(pk=lost["id"]).update(state="running")
    # Past the lock's 30 minutes the page no longer follows it, and a new run may start.
    AgentTestRun.objects.for_tenant(tenant_a).filter(pk=lost["id"]).update(
        ran_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=31)
    )
    assert api_a.get(url).json()["current_run"] is None
    cache.delete(run_lock_key(Agent.objects.for_tenant(tenant_a).get(pk=agent_id)))

    assert _run(api_a, run_tasks, agent_id)["passed"] == 1
    old = api_a.get(f"{url}/runs/{lost['id']}").json()
    assert old["state"] == "failed"
    assert old["error"] == "La ejecución se interrumpió (el proceso que la ejecutaba se detuvo)."


def test_a_run_past_its_time_limit_fails_in_words_and_keeps_what_ran(
    api_a: Any, tenant_a: Tenant, run_tasks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from ai_agents.services import agent_tests
    from ai_agents.services.agent_tests import SLICE_SOFT_S

    agent_id = offline_agent(api_a, tenant_a)
    first = _add(api_a, agent_id, PRICE)
    second = _add(api_a, agent_id, CAKE)
    real = agent_tests.agent_playground
    asked: list[str] = []

    def playground(**kwargs: Any) -> Any:
        asked.append(kwargs["text"])
        if len(asked) == 2:  # Celery raises this inside whatever runs at the soft limit
            raise SoftTimeLimitExceeded()
        return real(**kwargs)

    monkeypatch.setattr(agent_tests, "agent_playground", playground)
    with run_tasks():
        queued = api_a.post(f"/api/v1/agents/{agent_id}/tests/run").json()
    run = api_a.get(f"/api/v1/agents/{agent_id}/tests/runs/{queued['id']}").json()
    assert run["state"] == "failed"
    # The slice's own limit (the task's), not the whole run's 20 minutes.
    assert f"Una tanda de pruebas superó su tiempo máximo ({SLICE_SOFT_S} s)" in run["error"]
    assert (run["cases_done"], run["cases_total"]) == (1, 2)
    assert [r["id"] for r in run["results"]] == [first["id"]]
    listed = api_a.get(f"/api/v1/agents/{agent_id}/tests").json()
    assert listed["last_run"] is None and listed["current_run"] is None
    assert [c["last_passed"] for c in listed["results"]] == [None, None]  # not a finished run
    assert second["id"] not in {r["id"] for r in run["results"]}
    monkeypatch.setattr(agent_tests, "agent_playground", real)
    assert _run(api_a, run_tasks, agent_id)["passed"] == 2  # the agent is free again


def test_a_run_that_crashes_says_so_in_words_without_the_error_type(
    api_a: Any, tenant_a: Tenant, run_tasks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error's type (and traceback) go to the log (`agent_tests.run_crashed`)."""
    from ai_agents.services import agent_tests

    agent_id = offline_agent(api_a, tenant_a)
    _add(api_a, agent_id, PRICE)

    def playground(**kwargs: Any) -> Any:
        raise LookupError("a bug")

    monkeypatch.setattr(agent_tests, "agent_playground", playground)
    with run_tasks():
        queued = api_a.post(f"/api/v1/agents/{agent_id}/tests/run").json()
    run = api_a.get(f"/api/v1/agents/{agent_id}/tests/runs/{queued['id']}").json()
    assert (run["state"], run["error"]) == ("failed", "Error interno al ejecutar las pruebas.")


def test_command_refuses_an_unknown_agent() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Agente desconocido"):
        call_command("agent_test", "not-an-id")
    with pytest.raises(CommandError, match="Agente desconocido"):
        call_command("agent_test", "00000000-0000-0000-0000-000000000000")


def test_a_new_document_or_prompt_is_named_among_the_changes(
    api_a: Any, tenant_a: Tenant, run_tasks: Any
) -> None:
    from ai_agents.models import KnowledgeBase
    from ai_agents.services.knowledge import document_ingest
    from ai_agents.services.knowledge_documents import document_add
    from erp.tenancy.scoping import tenant_scope

    agent_id = offline_agent(api_a, tenant_a)
    _add(api_a, agent_id, PRICE)
    _run(api_a, run_tasks, agent_id)
    with tenant_scope(tenant_a):
        kb = KnowledgeBase.objects.get()
        added = document_add(
            kb=kb, data=b"# Devoluciones\n\n30 dias.", filename="dev.md", enqueue=False
        )
        document_ingest(document=added.document)
    api_a.patch(f"/api/v1/agents/{agent_id}", {"system_prompt": "Eres Lucía."}, format="json")
    run = _run(api_a, run_tasks, agent_id)
    assert run["changes"]["config"] == ["prompt", "documents"]
    assert run["changes"]["cases"] == [] and run["changes"]["first_run"] is False


def test_the_admin_page_is_for_the_agents_tenant_owner_or_admin(
    api_a: Any, tenant_a: Tenant, owner: Any, member: Any, outsider: Any
) -> None:
    from django.test import Client

    agent_id = create_agent(api_a, provider="offline")
    url = f"/admin/ai_agents/agent/{agent_id}/playground/"
    statuses = {}
    for name, persona in (("owner", owner), ("member", member), ("outsider", outsider)):
        client = Client()
        client.force_login(persona.user)
        statuses[name] = client.get(url).status_code
    assert statuses == {"owner": 200, "member": 403, "outsider": 404}
    client = Client()
    client.force_login(owner.user)
    page = client.get(url).content.decode()
    assert f'data-api-url="/api/v1/agents/{agent_id}"' in page and 'data-tenant="acme"' in page
    change = client.get(f"/admin/ai_agents/agent/{agent_id}/change/").content.decode()
    assert url in change  # the link from the agent's page


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.django_db(transaction=True)
def test_an_upload_during_a_run_is_indexed_before_the_run_ends(
    api_a: Any, tenant_a: Tenant, tmp_path: Any
) -> None:
    """A real bulk worker (one task at a time, as deployed): the run goes a slice at a time
    (one test each here), so the document queued after it is indexed in between, and the run
    ends with the results of a run in one go."""
    import time

    from ai_agents.models import Agent, Document
    from ai_agents.services.agent_tests import agent_tests_run
    from erp.tenancy.scoping import tenant_scope
    from erp.testing.celery_worker import worker_running

    agent_id = offline_agent(api_a, tenant_a)
    for case in (PRICE, REFUND_CASE, CAKE, {**PRICE, "expected_text": "99,99"}):
        _add(api_a, agent_id, case)
    with tenant_scope(tenant_a):  # as before: the whole run in one go, in-process
        at_once = agent_tests_run(agent=Agent.objects.get(pk=agent_id)).results
    queued = api_a.post(f"/api/v1/agents/{agent_id}/tests/run").json()
    kb = api_a.post("/api/v1/knowledge-bases", {"name": "Nuevo"}, format="json").json()
    upload = api_a.post(
        f"/api/v1/knowledge-bases/{kb['id']}/documents",
        {"file": SimpleUploadedFile("faq.md", b"# FAQ\n\nAbrimos de 9 a 14.\n", "text/markdown")},
        format="multipart",
    ).json()
    run_url = f"/api/v1/agents/{agent_id}/tests/runs/{queued['id']}"
    worker: Any
    with worker_running(tmp_path, prefix="slices", AGENT_TESTS_SLICE_SECONDS="0") as worker:
        deadline = time.monotonic() + 120
        while (run := api_a.get(run_url).json())["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, run
            time.sleep(0.2)
    assert (run["state"], run["cases_done"], run["passed"], run["failed"]) == ("done", 4, 3, 1)
    fields = ("id", "passed", "why", "reply", "escalated")
    assert [[r[f] for f in fields] for r in run["results"]] == [
        [r[f] for f in fields] for r in at_once
    ]
    assert Document.objects.unscoped().get(pk=upload["id"]).status == "ready"
    # The worker's log, in the order it ran them: the indexing went between two slices.
    ran = [line for line in worker.log_path.read_text().splitlines() if "succeeded" in line]
    order = [
        "ingest" if "bulk_ingest_document" in line else "slice"
        for line in ran
        if upload["id"] in line or queued["id"] in line
    ]
    assert order == ["slice", "ingest", "slice", "slice", "slice"], order
