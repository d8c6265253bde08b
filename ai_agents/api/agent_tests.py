"""The playground and the saved tests of an agent:

- `POST /api/v1/agents/{id}/test {"text", "history": [{"role", "text"}]}`: one message through
  the pipeline, nothing stored (ai_agents/services/playground.py);
- `GET/POST /api/v1/agents/{id}/tests`, `GET/PATCH/DELETE /api/v1/agents/{id}/tests/{case}`:
  the saved cases {"question", "expectation": contains|escalates|no_answer, "expected_text"};
- `POST /api/v1/agents/{id}/tests/run`: queues a run of them all (202, the run `queued`);
  `GET /api/v1/agents/{id}/tests/runs/{run}`: its state, progress, results and what changed.

Rights: owner/admin of the agent's tenant, or an API key of it (a test spends the tenant's
tokens); another tenant's agent is 404.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from ai_agents.api.agents import access_agent
from ai_agents.api.member import StaffInputError
from ai_agents.models import AgentTestCase, AgentTestRun
from ai_agents.services import agent_tests as service
from ai_agents.services.playground import (
    HISTORY_MAX_ITEMS,
    HISTORY_ROLES,
    TEXT_MAX_CHARS,
    HistoryTurn,
    agent_playground,
)
from erp.api.errors import error_body
from erp.api.views import TenantGenericAPIView
from erp.tenancy.permissions import HasTenant
from erp.tenancy.selectors import access_tenant_object


class CanTestAgents(HasTenant):
    """API keys and owner/admin staff, for reads too (the results show the agent's answers
    and each run spends the tenant's tokens)."""

    message = gettext_lazy("Solo el propietario o un administrador de la empresa puede hacer esto.")

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        membership = getattr(request._request, "membership", None)
        return membership is None or bool(membership.can_manage)  # None: an API key


PlaygroundRequest = inline_serializer(
    "AgentPlaygroundRequest",
    {
        "text": serializers.CharField(max_length=TEXT_MAX_CHARS),
        "history": serializers.ListField(
            child=inline_serializer(
                "AgentPlaygroundTurn",
                {"role": serializers.ChoiceField(HISTORY_ROLES), "text": serializers.CharField()},
            ),
            required=False,
            max_length=HISTORY_MAX_ITEMS,
        ),
    },
)
CaseWrite = inline_serializer(
    "AgentTestCaseWrite",
    {
        "question": serializers.CharField(),
        "expectation": serializers.ChoiceField(AgentTestCase.Expectation.values),
        "expected_text": serializers.CharField(required=False, allow_blank=True),
    },
)


def playground_input(data: Any) -> tuple[str, list[HistoryTurn]]:
    """The text and history, bounded before any work; StaffInputError names what is wrong."""
    if not isinstance(data, dict):
        raise StaffInputError("body", _("El cuerpo debe ser un objeto JSON."))
    text = data.get("text")
    if not isinstance(text, str) or not text.strip() or len(text) > TEXT_MAX_CHARS:
        raise StaffInputError(
            "text", _("Escriba el mensaje, de hasta %(n)s caracteres.") % {"n": TEXT_MAX_CHARS}
        )
    raw = data.get("history", [])
    if not isinstance(raw, list) or len(raw) > HISTORY_MAX_ITEMS:
        raise StaffInputError(
            "history",
            _("El historial es una lista de hasta %(n)s mensajes.") % {"n": HISTORY_MAX_ITEMS},
        )
    history = []
    for i, item in enumerate(raw, start=1):
        role = item.get("role") if isinstance(item, dict) else None
        said = item.get("text") if isinstance(item, dict) else None
        if role not in HISTORY_ROLES or not isinstance(said, str) or len(said) > TEXT_MAX_CHARS:
            raise StaffInputError(
                "history",
                _(
                    'Mensaje %(i)s del historial: use {"role": "user" o "assistant", '
                    '"text": hasta %(n)s caracteres}.'
                )
                % {"i": i, "n": TEXT_MAX_CHARS},
            )
        history.append(HistoryTurn(role=role, text=said))
    return text.strip(), history


class AgentPlaygroundView(TenantGenericAPIView):
    permission_classes = [CanTestAgents]

    @extend_schema(request=PlaygroundRequest, responses={200: None})
    def post(self, request: Request, agent_id: Any) -> Response:
        agent = access_agent(self.tenant, agent_id)
        text, history = playground_input(request.data)
        return Response(agent_playground(agent=agent, text=text, history=history).as_dict())


def case_json(case: AgentTestCase) -> dict[str, Any]:
    return {
        "id": str(case.pk),
        "question": case.question,
        "expectation": case.expectation,
        "expectation_label": str(case.get_expectation_display()),
        "expected_text": case.expected_text,
        "last_passed": case.last_passed,
        "last_reply": case.last_reply,
        "last_run_at": case.last_run_at,
    }


def run_json(run: AgentTestRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "id": str(run.pk),
        "state": run.state,
        "cases_total": run.cases_total,
        "cases_done": run.cases_done,
        "error": run.error,
        "ran_at": run.ran_at,
        "finished_at": run.finished_at,
        "passed": run.passed,
        "failed": run.failed,
        "regressions": run.regressions,
        "changes": run.changes,
        "results": run.results,
    }


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise StaffInputError("body", _("El cuerpo debe ser un objeto JSON."))
    return dict(request.data)


class AgentTestListView(TenantGenericAPIView):
    permission_classes = [CanTestAgents]

    @extend_schema(responses={200: None}, operation_id="v1_agents_tests_list")
    def get(self, request: Request, agent_id: Any) -> Response:
        agent = access_agent(self.tenant, agent_id)
        cases = AgentTestCase.objects.for_tenant(agent.tenant_id).filter(agent=agent)
        runs = AgentTestRun.objects.for_tenant(agent.tenant_id).filter(agent=agent)
        last = runs.filter(state=AgentTestRun.State.DONE).order_by("-ran_at").first()
        current = (
            runs.filter(
                state__in=[AgentTestRun.State.QUEUED, AgentTestRun.State.RUNNING],
                ran_at__gte=timezone.now() - timedelta(seconds=service.RUN_LOCK_S),  # else lost
            )
            .order_by("-ran_at")
            .first()
        )
        return Response(
            {
                "results": [case_json(c) for c in cases.order_by("created_at", "id")],
                "last_run": run_json(last),  # the last one that ran to the end
                "current_run": run_json(current),  # queued or going on, else null
            }
        )

    @extend_schema(request=CaseWrite, responses={201: None})
    def post(self, request: Request, agent_id: Any) -> Response:
        agent = access_agent(self.tenant, agent_id)
        try:
            case = service.agent_test_create(agent=agent, data=_body(request))
        except service.AgentTestInvalid as error:
            raise StaffInputError(error.field, error.message) from None
        return Response(case_json(case), status=status.HTTP_201_CREATED)


class AgentTestDetailView(TenantGenericAPIView):
    permission_classes = [CanTestAgents]

    def _case(self, agent_id: Any, case_id: Any) -> AgentTestCase:
        agent = access_agent(self.tenant, agent_id)
        own = AgentTestCase.objects.for_tenant(self.tenant).filter(agent=agent)
        return access_tenant_object(AgentTestCase, self.tenant, case_id, queryset=own)

    @extend_schema(responses={200: None})
    def get(self, request: Request, agent_id: Any, case_id: Any) -> Response:
        return Response(case_json(self._case(agent_id, case_id)))

    @extend_schema(request=CaseWrite, responses={200: None})
    def patch(self, request: Request, agent_id: Any, case_id: Any) -> Response:
        case = self._case(agent_id, case_id)
        try:
            case = service.agent_test_update(case=case, data=_body(request))
        except service.AgentTestInvalid as error:
            raise StaffInputError(error.field, error.message) from None
        return Response(case_json(case))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, agent_id: Any, case_id: Any) -> Response:
        service.agent_test_delete(case=self._case(agent_id, case_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


RunRead = inline_serializer(
    "AgentTestRun",
    {
        "id": serializers.UUIDField(),
        "state": serializers.ChoiceField(AgentTestRun.State.values),
        "cases_total": serializers.IntegerField(),
        "cases_done": serializers.IntegerField(),
        "error": serializers.CharField(),
        "ran_at": serializers.DateTimeField(),
        "finished_at": serializers.DateTimeField(allow_null=True),
        "passed": serializers.IntegerField(),
        "failed": serializers.IntegerField(),
        "regressions": serializers.IntegerField(),
        "changes": serializers.DictField(),
        "results": serializers.ListField(child=serializers.DictField()),
    },
)


class AgentTestRunView(TenantGenericAPIView):
    permission_classes = [CanTestAgents]

    @extend_schema(request=None, responses={202: RunRead, 409: None})
    def post(self, request: Request, agent_id: Any) -> Response:
        """Queues a run of every saved case (the bulk worker runs them one after the other);
        poll `tests/runs/{run}` until its state is `done` or `failed`."""
        agent = access_agent(self.tenant, agent_id)
        try:
            run = service.agent_tests_start(agent=agent)
        except service.AgentTestsBusy as error:
            return Response(error_body(error.code, error.message), status=error.status)
        return Response(run_json(run), status=status.HTTP_202_ACCEPTED)


class AgentTestRunDetailView(TenantGenericAPIView):
    permission_classes = [CanTestAgents]

    @extend_schema(responses={200: RunRead})
    def get(self, request: Request, agent_id: Any, run_id: Any) -> Response:
        agent = access_agent(self.tenant, agent_id)
        own = AgentTestRun.objects.for_tenant(self.tenant).filter(agent=agent)
        return Response(
            run_json(access_tenant_object(AgentTestRun, self.tenant, run_id, queryset=own))
        )
