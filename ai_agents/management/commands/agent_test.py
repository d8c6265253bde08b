"""`manage.py agent_test AGENT_ID [--strict]`: runs the agent's saved tests (the same run as
"Ejecutar todas"), prints a table and what changed since the last run, and exits 1 on a
regression (a case that passed last time fails now); with --strict, on any failing case."""

from __future__ import annotations

import sys
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ai_agents.models import Agent, AgentTestRun
from ai_agents.services.agent_tests import AgentTestsBusy, agent_tests_run
from erp.tenancy.scoping import all_tenants

QUESTION_COLUMN = 48


class Command(BaseCommand):
    help = (
        "Ejecuta las pruebas guardadas de un agente, imprime una tabla y sale con 1 si una "
        "prueba que pasaba ahora falla (con --strict, si falla cualquiera)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id", help="id del agente")
        parser.add_argument(
            "--strict", action="store_true", help="sale con 1 si falla cualquier prueba"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        agent = _agent(options["agent_id"])
        try:
            run = agent_tests_run(agent=agent)
        except AgentTestsBusy as error:
            raise CommandError(error.message) from None
        for line in run_table(run):
            self.stdout.write(line)
        failing = run.regressions or (options["strict"] and run.failed)
        if failing:
            sys.exit(1)


def run_table(run: AgentTestRun) -> list[str]:
    lines = [f"{'RESULTADO':<10} {'ANTES':<6} {'PREGUNTA':<{QUESTION_COLUMN}} MOTIVO"]
    for r in run.results:
        state = "REGRESIÓN" if r["regression"] else "pasa" if r["passed"] else "falla"
        before = {True: "pasa", False: "falla", None: "-"}[r["before"]]
        question = r["question"].replace("\n", " ")[:QUESTION_COLUMN]
        lines.append(f"{state:<10} {before:<6} {question:<{QUESTION_COLUMN}} {r['why']}")
    changes = run.changes
    lines.append(
        f"Pasan: {run.passed}, fallan: {run.failed}, regresiones: {run.regressions} "
        f"({len(run.results)} pruebas)"
    )
    if changes.get("config"):
        lines.append("Cambió desde la última ejecución: " + ", ".join(changes["config"]))
    return lines


def _agent(value: str) -> Agent:
    try:
        pk = uuid.UUID(value)
    except ValueError:
        raise CommandError(f"Agente desconocido: {value}") from None
    with all_tenants():  # an operator's command: any tenant's agent, by id
        agent = Agent.objects.unscoped().select_related("tenant").filter(pk=pk).first()
    if agent is None:
        raise CommandError(f"Agente desconocido: {value}")
    return agent
