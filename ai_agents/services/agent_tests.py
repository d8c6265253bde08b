"""Saved tests of an agent: a question and what its answer must do (contain a text, pass to a
person, say it does not know). "Ejecutar todas" runs each through the playground
(ai_agents/services/playground.py), keeps its result on the case and records the run with
what changed since the one before: the configuration parts (prompt, settings, documents) and
the cases whose result changed. A regression is a case that passed last time and fails now.

The page and the API queue the run (`agent_tests_start`): the bulk task
"ai_agents.bulk_agent_tests_run" runs it in slices of about 20 s, each queuing the next
(ai_agents/services/agent_test_slices.py), so an upload's indexing queued meanwhile goes in
between; the whole run within RUN_SOFT_S. `manage.py agent_test` runs it in-process
(`agent_tests_run`). Either way one run per agent at a time. No transaction is held during a
run: each question waits for the model; the progress and the results so far are saved after
each case, the cases' results together at the end.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ai_agents.models import Agent, AgentTestCase, AgentTestRun, Document
from ai_agents.models.agent_tests import (
    CASES_PER_AGENT_MAX,
    EXPECTED_MAX_CHARS,
    QUESTION_MAX_CHARS,
)
from ai_agents.rules.text import normalize
from ai_agents.services.agents import EDITABLE
from ai_agents.services.playground import PlaygroundResult, agent_playground
from erp.api.errors import ServiceError
from erp.celery import enqueue
from erp.tenancy.scoping import acts_for

logger = logging.getLogger(__name__)

Expectation = AgentTestCase.Expectation
# The agent's fields each part of the digest covers (what "what changed" names): the prompt
# texts, and every other editable field but the name and description.
PROMPT_FIELDS = ("system_prompt", "fallback_message", "escalation_message")
SETTINGS_FIELDS = tuple(f for f in EDITABLE if f not in {*PROMPT_FIELDS, "name", "description"})


class AgentTestInvalid(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def agent_test_clean(data: Mapping[str, Any]) -> dict[str, str]:
    """The case's values as stored, or AgentTestInvalid naming the field."""
    question, kind = data.get("question"), data.get("expectation")
    expected = data.get("expected_text", "")
    if not isinstance(question, str) or not question.strip() or len(question) > QUESTION_MAX_CHARS:
        raise AgentTestInvalid(
            "question",
            _("Escriba la pregunta, de hasta %(n)s caracteres.") % {"n": QUESTION_MAX_CHARS},
        )
    if kind not in Expectation.values:
        raise AgentTestInvalid(
            "expectation",
            _("Lo esperado es uno de: %(v)s.") % {"v": ", ".join(Expectation.values)},
        )
    if not isinstance(expected, str) or len(expected) > EXPECTED_MAX_CHARS:
        raise AgentTestInvalid(
            "expected_text",
            _("El texto esperado admite hasta %(n)s caracteres.") % {"n": EXPECTED_MAX_CHARS},
        )
    if kind == Expectation.CONTAINS and not normalize(expected):
        raise AgentTestInvalid(
            "expected_text", _("Escriba el texto que la respuesta debe contener.")
        )
    return {
        "question": question.strip(),
        "expectation": str(kind),
        "expected_text": expected.strip(),
    }


@acts_for("agent")
def agent_test_create(*, agent: Agent, data: Mapping[str, Any]) -> AgentTestCase:
    values = agent_test_clean(data)
    if (
        AgentTestCase.objects.for_tenant(agent.tenant_id).filter(agent=agent).count()
        >= CASES_PER_AGENT_MAX
    ):
        raise AgentTestInvalid(
            "question",
            _("Un agente admite como máximo %(n)s pruebas.") % {"n": CASES_PER_AGENT_MAX},
        )
    return AgentTestCase.objects.create(tenant_id=agent.tenant_id, agent=agent, **values)


@acts_for("case")
def agent_test_update(*, case: AgentTestCase, data: Mapping[str, Any]) -> AgentTestCase:
    current = {k: getattr(case, k) for k in ("question", "expectation", "expected_text")}
    values = agent_test_clean({**current, **data})
    for name, value in values.items():
        setattr(case, name, value)
    case.save(update_fields=list(values))
    return case


@acts_for("case")
def agent_test_delete(*, case: AgentTestCase) -> None:
    case.delete()


@dataclass(frozen=True)
class Verdict:
    passed: bool
    why: str  # in words, empty when it passed


def case_judge(case: AgentTestCase, result: PlaygroundResult) -> Verdict:
    if result.error is not None:
        return Verdict(False, result.error)
    if case.expectation == Expectation.ESCALATES:
        ok = result.escalation is not None
        return Verdict(ok, "" if ok else _("No pasó a una persona."))
    if case.expectation == Expectation.NO_ANSWER:
        ok = result.no_answer
        return Verdict(ok, "" if ok else _("No dijo que no lo sabe."))
    ok = normalize(case.expected_text) in normalize(result.reply)
    return Verdict(
        ok, "" if ok else _("La respuesta no contiene «%(t)s».") % {"t": case.expected_text}
    )


def agent_config_digest(*, agent: Agent) -> dict[str, str]:
    """A digest per part of what the answers depend on: prompt, settings, documents (the
    knowledge bases linked and the content of their documents)."""
    links = Agent.knowledge_bases.through.objects.filter(agent_id=agent.pk)
    kb_ids = sorted(str(pk) for pk in links.values_list("knowledgebase_id", flat=True))
    documents = sorted(
        Document.objects.for_tenant(agent.tenant_id)
        .filter(knowledge_base_id__in=kb_ids)
        .values_list("knowledge_base_id", "content_hash", "status")
    )
    return {
        "prompt": _digest([getattr(agent, f) for f in PROMPT_FIELDS]),
        "settings": _digest([getattr(agent, f) for f in SETTINGS_FIELDS]),
        "documents": _digest([kb_ids, [[str(k), h, s] for k, h, s in documents]]),
    }


def _digest(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


class AgentTestsBusy(ServiceError):
    code = "run_in_progress"
    status = 409


# One run per agent at a time (two would spend the tokens twice). A queued run must be done
# within RUN_SOFT_S of its first slice's start (no case starts that could end later); the lock
# outlives a run stopped midway by this long at most.
RUN_SOFT_S = 20 * 60
RUN_LOCK_S = 30 * 60
# A queued run's slice (agent_test_slices): its own time limit (the bulk task's). Its cases
# start within AGENT_TESTS_SLICE_SECONDS and each ends within its agent's total_timeout_ms
# (300 s at most); past this the run fails like past RUN_SOFT_S (`_over_time` says which).
SLICE_MARGIN_S = 30
SLICE_SOFT_S = settings.AGENT_TESTS_SLICE_SECONDS + 300 + SLICE_MARGIN_S
State = AgentTestRun.State


def run_lock_key(agent: Agent) -> str:
    return f"agent-tests-run:{agent.pk}"


@acts_for("agent")
def agent_tests_start(*, agent: Agent) -> AgentTestRun:
    """Queues a run of every saved case of the agent (bulk queue, after commit); returns it
    `queued`. AgentTestsBusy while another run of the same agent is going on."""
    run = _run_begin(agent)
    transaction.on_commit(lambda: _run_enqueue(run))
    return run


def _run_enqueue(run: AgentTestRun) -> None:
    try:
        enqueue("ai_agents.bulk_agent_tests_run", str(run.pk))
    except Exception:
        run_enqueue_failed(run)


def run_enqueue_failed(run: AgentTestRun) -> None:
    """The broker is down: said on the run, and the agent is free again."""
    logger.warning("agent_tests.enqueue_failed", extra={"run_id": str(run.pk)}, exc_info=True)
    _run_fail(run, _("No se pudo poner en cola la ejecución. Inténtelo de nuevo."))
    _lock_give_back(run_lock_key(run.agent), str(run.pk))


@acts_for("agent")
def agent_tests_run(*, agent: Agent) -> AgentTestRun:
    """Runs every saved case of the agent here and now (the command); returns the run."""
    run = _run_begin(agent)
    agent_test_run_work(run=run, first=True)
    return run


def _run_begin(agent: Agent) -> AgentTestRun:
    run_id = uuid.uuid4()
    key = run_lock_key(agent)
    if not cache.add(key, str(run_id), RUN_LOCK_S):
        raise AgentTestsBusy(
            _("Las pruebas de este agente ya se están ejecutando: espere a que terminen.")
        )
    try:
        # The lock was free: a run still queued or going on was lost with its worker.
        AgentTestRun.objects.for_tenant(agent.tenant_id).filter(
            agent=agent, state__in=[State.QUEUED, State.RUNNING]
        ).update(
            state=State.FAILED,
            error=_("La ejecución se interrumpió (el proceso que la ejecutaba se detuvo)."),
            finished_at=timezone.now(),
        )
        total = AgentTestCase.objects.for_tenant(agent.tenant_id).filter(agent=agent).count()
        return AgentTestRun.objects.create(
            id=run_id, tenant_id=agent.tenant_id, agent=agent, cases_total=total
        )
    except BaseException:
        cache.delete(key)
        raise


class RunOverTime(Exception):
    """The run's next case could end past RUN_SOFT_S after its start: it stops there."""


def case_budget_s(agent: Agent) -> float:
    """How long one case may take: the agent's total_timeout_ms (the playground keeps it)."""
    return int(agent.processing["total_timeout_ms"]) / 1000


def agent_test_run_work(
    *, run: AgentTestRun, first: bool, until: float | None = None, deadline: float | None = None
) -> bool:
    """Runs the run's next cases, saving the progress after each, until none is left or
    `until` (time.monotonic()) has passed after one case at least; starts none that could end
    after `deadline` (time.time()). True when the run is over: `done` with the results, or
    `failed` with the reason in words (past its time limit, or a bug), and the agent free
    again; False when cases are left for the next slice. `first`: the run starts (it was
    queued, or its first slice died): it is `running` and takes the agent again."""
    runs = AgentTestRun.objects.for_tenant(run.tenant_id).filter(pk=run.pk)
    if first:
        if not runs.filter(state__in=[State.QUEUED, State.RUNNING]).update(state=State.RUNNING):
            return True
        if not _lock_take_again(run_lock_key(run.agent), str(run.pk)):
            return True  # another run took the agent (and marked this one failed)
        run.state, run.config_digest = State.RUNNING, agent_config_digest(agent=run.agent)
        runs.update(config_digest=run.config_digest)  # the configuration it runs on
    try:
        if not _cases_run(run, until=until, deadline=deadline):
            return False
        _run_store(run)
    except (SoftTimeLimitExceeded, RunOverTime) as exc:
        _run_fail(run, _over_time(exc))
    except Exception as exc:  # the type and traceback go to the log, words to the page
        logger.exception(
            "agent_tests.run_crashed", extra={"run_id": str(run.pk), "error": type(exc).__name__}
        )
        _run_fail(run, _("Error interno al ejecutar las pruebas."))
    # Not on a kill (the worker's process is replaced): its slice is taken again.
    _lock_give_back(run_lock_key(run.agent), str(run.pk))
    return True


def _over_time(exc: Exception) -> str:
    """Which time limit the run went past, in words: the whole run's (RUN_SOFT_S, checked
    before each case) or its slice's (the bulk task's soft limit, `SLICE_SOFT_S`: a case
    that outlasted its agent's budget)."""
    if isinstance(exc, RunOverTime):
        return _(
            "Las pruebas superaron el tiempo máximo (%(minutes)s min): se guardaron las "
            "terminadas. Reduzca el número de pruebas o el tiempo de respuesta del agente."
        ) % {"minutes": RUN_SOFT_S // 60}
    return _(
        "Una tanda de pruebas superó su tiempo máximo (%(seconds)s s): se guardaron las "
        "terminadas. Reduzca el tiempo de respuesta del agente."
    ) % {"seconds": SLICE_SOFT_S}


def _lock_take_again(key: str, token: str) -> bool:
    """The run starts: the agent's lock is this run's for RUN_LOCK_S more (a run that waited
    in the queue past its lock takes it back). False when another run holds it."""
    if cache.add(key, token, RUN_LOCK_S):
        return True
    if cache.get(key) != token:
        return False
    cache.set(key, token, RUN_LOCK_S)
    return True


def _lock_give_back(key: str, token: str) -> None:
    """Only while the lock is still this run's (past RUN_LOCK_S another run may hold it)."""
    if cache.get(key) == token:
        cache.delete(key)


def _run_fail(run: AgentTestRun, reason: str) -> AgentTestRun:
    run.state, run.error, run.finished_at = State.FAILED, reason, timezone.now()
    run.save(update_fields=["state", "error", "finished_at"])
    return run


def _cases_run(run: AgentTestRun, *, until: float | None, deadline: float | None) -> bool:
    """The cases not run yet: those saved before the run was queued, in order, less those in
    its results (a slice that died saved them) and those deleted meanwhile."""
    agent, budget = run.agent, case_budget_s(run.agent)
    runs = AgentTestRun.objects.for_tenant(run.tenant_id).filter(pk=run.pk)
    results: list[dict[str, Any]] = list(runs.values_list("results", flat=True).get())
    ran = {r["id"] for r in results}
    left = [
        case
        for case in AgentTestCase.objects.for_tenant(agent.tenant_id)
        .filter(agent=agent, created_at__lte=run.ran_at)
        .order_by("created_at", "id")
        if str(case.pk) not in ran
    ]
    runs.update(cases_total=len(results) + len(left))
    for number, case in enumerate(left):
        if number and until is not None and time.monotonic() >= until:
            return False
        if deadline is not None and time.time() + budget > deadline:
            raise RunOverTime()
        outcome = agent_playground(agent=agent, text=case.question)
        verdict = case_judge(case, outcome)
        results.append(_case_result(case, outcome, verdict))
        runs.update(cases_done=len(results), results=results)  # the page shows them as they come
    run.cases_total = run.cases_done = len(results)
    run.results = results
    return True


def _case_result(
    case: AgentTestCase, outcome: PlaygroundResult, verdict: Verdict
) -> dict[str, Any]:
    return {
        "id": str(case.pk),
        "question": case.question,
        "expectation": case.expectation,
        "expected_text": case.expected_text,
        "passed": verdict.passed,
        "why": verdict.why,
        "reply": outcome.reply,
        "escalated": outcome.escalation is not None,
        "before": case.last_passed,  # None: never run
        "regression": case.last_passed is True and not verdict.passed,
        "reply_changed": case.last_run_at is not None and case.last_reply != outcome.reply,
    }


def _run_store(run: AgentTestRun) -> AgentTestRun:
    now, results, digest = timezone.now(), run.results, run.config_digest
    previous = (
        AgentTestRun.objects.for_tenant(run.tenant_id)
        .filter(agent_id=run.agent_id, state=State.DONE)
        .exclude(pk=run.pk)
        .order_by("-ran_at")
        .first()
    )
    changed_parts = (
        []
        if previous is None
        else [p for p in digest if previous.config_digest.get(p) != digest[p]]
    )
    changes = {
        "config": changed_parts,
        "cases": [
            r["id"] for r in results if r["before"] is not None and r["before"] != r["passed"]
        ],
        "replies": [r["id"] for r in results if r["reply_changed"]],
        "first_run": previous is None,
    }
    with transaction.atomic():
        rows = AgentTestCase.objects.for_tenant(run.tenant_id)
        for result in results:
            # An update, not a save: a case deleted while the run went on stays deleted.
            rows.filter(pk=result["id"]).update(
                last_passed=result["passed"], last_reply=result["reply"], last_run_at=now
            )
        run.state, run.finished_at = State.DONE, now
        run.passed = sum(1 for r in results if r["passed"])
        run.failed = sum(1 for r in results if not r["passed"])
        run.regressions = sum(1 for r in results if r["regression"])
        run.config_digest, run.changes = digest, changes
        run.save()
        return run
