"""Saved tests of an agent (question -> expectation) and the record of each run of them
(ai_agents/services/agent_tests.py runs them through the playground)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _

from ai_agents.models.agents import Agent
from erp.tenancy.models import TenantOwnedModel

QUESTION_MAX_CHARS = 4000
EXPECTED_MAX_CHARS = 500
CASES_PER_AGENT_MAX = 50


class AgentTestCase(TenantOwnedModel):
    class Expectation(models.TextChoices):
        CONTAINS = "contains", _("la respuesta contiene")
        ESCALATES = "escalates", _("pasa a una persona")
        NO_ANSWER = "no_answer", _("dice que no lo sabe")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="test_cases")
    question = models.TextField(_("pregunta"), max_length=QUESTION_MAX_CHARS)
    expectation = models.CharField(_("se espera"), max_length=20, choices=Expectation.choices)
    expected_text = models.CharField(_("texto esperado"), max_length=EXPECTED_MAX_CHARS, blank=True)
    # The last run (empty until the first).
    last_passed = models.BooleanField(_("pasó la última vez"), null=True, editable=False)
    last_reply = models.TextField(_("última respuesta"), blank=True, editable=False)
    last_run_at = models.DateTimeField(_("última ejecución"), null=True, editable=False)
    created_at = models.DateTimeField(_("creada"), auto_now_add=True)

    class Meta:
        verbose_name = _("prueba guardada")
        verbose_name_plural = _("pruebas guardadas")
        indexes = [
            models.Index(fields=["tenant", "agent", "created_at"], name="agenttest_tenant_agent")
        ]

    def __str__(self) -> str:
        return self.question[:60]


class AgentTestRun(TenantOwnedModel):
    """One "Ejecutar todas": queued, run case by case on the bulk queue in slices (progress and
    the results so far saved after each case), then the counts, the configuration it ran on (a
    digest per part: prompt, settings, documents) and what changed since the run before."""

    class State(models.TextChoices):
        QUEUED = "queued", _("en cola")
        RUNNING = "running", _("en curso")
        DONE = "done", _("terminada")
        FAILED = "failed", _("fallida")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="test_runs")
    ran_at = models.DateTimeField(_("ejecutada"), auto_now_add=True)
    state = models.CharField(
        _("estado"), max_length=10, choices=State.choices, default=State.QUEUED
    )
    cases_total = models.PositiveIntegerField(_("pruebas"), default=0)
    cases_done = models.PositiveIntegerField(_("pruebas hechas"), default=0)
    error = models.TextField(_("error"), blank=True)  # why a failed run stopped, in words
    finished_at = models.DateTimeField(_("terminada"), null=True, blank=True)
    passed = models.PositiveIntegerField(_("pasan"), default=0)
    failed = models.PositiveIntegerField(_("fallan"), default=0)
    regressions = models.PositiveIntegerField(_("regresiones"), default=0)
    config_digest = models.JSONField(_("configuración"), default=dict)
    changes = models.JSONField(_("cambios desde la anterior"), default=dict)
    results = models.JSONField(_("resultados"), default=list)

    class Meta:
        verbose_name = _("ejecución de pruebas")
        verbose_name_plural = _("ejecuciones de pruebas")
        indexes = [models.Index(fields=["tenant", "agent", "ran_at"], name="agenttestrun_tenant")]
