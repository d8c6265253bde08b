from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ai_agents.conversations.context import rules_for
from ai_agents.knowledge.embeddings import cached_local_query_vector, local_query_vector
from ai_agents.models import Agent
from ai_agents.rules.loop_semantic import VectorOf
from ai_agents.services.escalation_eval import (
    Case,
    default_rules,
    evaluate,
    load_cases,
    report,
)
from erp.tenancy.scoping import all_tenants


class Command(BaseCommand):
    help = (
        "Mide la decisión de escalar sin modelo (reglas, capa aprendida y bucles) con un "
        "JSONL ({message, history, should_escalate, reason}): precisión y exhaustividad por "
        "motivo, la tabla de confusión y, al final, «accuracy A (n/N) precision P recall R»."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="casos en JSONL")
        parser.add_argument(
            "--agent", help="id del agente (por defecto, los disparadores de fábrica)"
        )
        parser.add_argument("--misses", action="store_true", help="lista los casos fallados")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            cases = load_cases(Path(options["file"]))
        except OSError as exc:
            raise CommandError(f"No se puede leer {options['file']}: {exc.strerror}") from None
        except ValueError as exc:
            raise CommandError(f"{options['file']}: {exc}") from None
        if not cases:
            raise CommandError("El archivo no tiene casos.")
        rules = default_rules()
        if options["agent"]:
            with all_tenants():  # an operator's command: any tenant's agent, by id
                agent = Agent.objects.unscoped().filter(pk=_uuid(options["agent"])).first()
            if agent is None:
                raise CommandError(f"Agente desconocido: {options['agent']}")
            rules = rules_for(agent)
        outcomes = evaluate(cases, rules, loop_vectors=_vectors(cases))
        if options["misses"]:
            for o in outcomes:
                if (o.reason != "none") != o.case.should_escalate or (
                    o.case.should_escalate and o.reason != o.case.reason
                ):
                    self.stdout.write(
                        f"MISS {o.case.reason} -> {o.reason} [{o.layer}] "
                        f"{o.case.message!r} {o.detail}"
                    )
        for line in report(outcomes):
            self.stdout.write(line)


def _vectors(cases: Sequence[Case]) -> VectorOf:
    """The customer messages' query vectors, computed here first (the cache may be cold; in a
    conversation each was embedded when it arrived), so the decisions are timed on cache hits."""
    for case in cases:
        for text in (case.message, *case.user_texts):
            local_query_vector(text)
    return cached_local_query_vector


def _uuid(value: str) -> Any:
    import uuid

    try:
        return uuid.UUID(value)
    except ValueError:
        raise CommandError(f"Agente desconocido: {value}") from None
