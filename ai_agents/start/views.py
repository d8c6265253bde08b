"""`/`: the staff start page. Per tenant of the member, a checklist that ticks itself from the
tenant's rows (agent, documents, a try, a channel, a teammate), each step linking to where it
is done; then the inbox, statistics and the admin. Anonymous visitors go to the login."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from ai_agents.selectors.setup import SetupProgress, setup_progress
from erp.tenancy.selectors import user_memberships


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    done: bool
    url: str
    action: str


def _add_url(name: str, tenant_id: int) -> str:
    # The admin's add form takes initial values from the query: the tenant comes preselected.
    return f"{reverse(name)}?tenant={tenant_id}"


def _steps(progress: SetupProgress) -> list[Step]:
    tenant_id = progress.tenant.pk
    if progress.knowledge_base_id:
        documents_url = reverse(
            "admin:ai_agents_knowledgebase_change", args=[progress.knowledge_base_id]
        )
    else:
        documents_url = _add_url("admin:ai_agents_knowledgebase_add", tenant_id)
    try_url = (
        reverse("admin:ai_agents_agent_playground", args=[progress.agent_id])
        if progress.agent_id
        else reverse("admin:ai_agents_agent_changelist")
    )
    return [
        Step(
            "agent",
            _("Crear un agente"),
            progress.has_agent,
            _add_url("admin:ai_agents_agent_add", tenant_id),
            _("Crear agente"),
        ),
        Step(
            "documents",
            _("Añadir documentos"),
            progress.has_documents,
            documents_url,
            _("Añadir documentos"),
        ),
        Step(
            "try",
            _("Probarlo"),
            progress.has_tried,
            try_url,
            _("Probar agente") if progress.agent_id else _("Ir a los agentes"),
        ),
        Step(
            "channel",
            _("Conectar un canal"),
            progress.has_channel,
            _add_url("admin:ai_agents_channelbinding_add", tenant_id),
            _("Conectar canal"),
        ),
        Step(
            "teammate",
            _("Invitar a un compañero"),
            progress.has_teammate,
            reverse("team", args=[progress.tenant.slug]),
            _("Invitar al equipo"),
        ),
    ]


@require_GET
@staff_member_required
def start_page(request: HttpRequest) -> HttpResponse:
    tenants: list[dict[str, Any]] = []
    for membership in user_memberships(request.user):  # type: ignore[arg-type]  # staff only
        steps = _steps(setup_progress(tenant=membership.tenant))
        done = sum(step.done for step in steps)
        tenants.append(
            {"tenant": membership.tenant, "steps": steps, "done": done, "total": len(steps)}
        )
    return render(request, "ai_agents/start.html", {"tenants": tenants})
