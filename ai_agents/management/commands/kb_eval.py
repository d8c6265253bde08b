from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ai_agents.demo import DEMO_KB_NAME
from ai_agents.knowledge.calibration import floor_curve, load_offtopic
from ai_agents.knowledge.confidence import floor_for
from ai_agents.knowledge.evaluation import Question, evaluate, load_questions
from ai_agents.models import KnowledgeBase
from erp.demo import DEMO_SLUG
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope


class Command(BaseCommand):
    help = (
        "Evalúa la recuperación con un archivo JSONL ({question, expected_document, "
        "expected_text}): recall@1, recall@5 y MRR para vectorial, léxica e híbrida. "
        "Acierto: un fragmento del documento esperado que contiene expected_text (o cualquier "
        "fragmento de ese documento si no hay expected_text)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="preguntas en JSONL")
        parser.add_argument("--tenant", default=DEMO_SLUG, help="empresa (por defecto la demo)")
        parser.add_argument("--kb", default=DEMO_KB_NAME, help="nombre de la base")
        parser.add_argument("--json", action="store_true", help="salida JSON")
        parser.add_argument("--misses", action="store_true", help="lista las preguntas falladas")
        parser.add_argument(
            "--offtopic",
            default=None,
            help="preguntas que la base no responde (JSONL {question}): imprime la curva del "
            "umbral de confianza de la respuesta sin modelo",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self._json = bool(options["json"])
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"Empresa desconocida: {options['tenant']}")
        try:
            questions = load_questions(Path(options["file"]))
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if not questions:
            raise CommandError("El archivo no tiene preguntas.")
        with tenant_scope(tenant):
            kb = KnowledgeBase.objects.for_tenant(tenant).filter(name=options["kb"]).first()
            if kb is None:
                raise CommandError(f"Base de conocimiento desconocida: {options['kb']}")
            results = evaluate(kb, questions)
            curve = self._curve(kb, questions, options["offtopic"])
        summary = {
            mode: {
                "recall@1": round(s.recall(1), 3),
                "recall@5": round(s.recall(5), 3),
                "mrr": round(s.mrr, 3),
            }
            for mode, s in results.items()
        }
        if options["json"]:
            extra = {"floor_curve": curve} if curve is not None else {}
            self.stdout.write(json.dumps({"questions": len(questions), **summary, **extra}))
            return
        self.stdout.write(f"{len(questions)} preguntas, base «{kb.name}»")
        self.stdout.write(f"{'modo':<10}{'recall@1':>10}{'recall@5':>10}{'MRR':>8}")
        for mode, row in summary.items():
            self.stdout.write(
                f"{mode:<10}{row['recall@1']:>10.3f}{row['recall@5']:>10.3f}{row['mrr']:>8.3f}"
            )
        if options["misses"]:
            for question, rank in zip(questions, results["hybrid"].ranks, strict=True):
                if not rank or rank > 5:
                    self.stdout.write(f"  fallo ({rank}): {question.question}")

    def _curve(
        self, kb: KnowledgeBase, questions: list[Question], path: str | None
    ) -> dict[str, Any] | None:
        """With --offtopic: the offline answer's floor curve, printed (not with --json) and
        returned."""
        if not path:
            return None
        try:
            offtopic = load_offtopic(Path(path))
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        rows, space = floor_curve(kb, questions, offtopic)
        curve = {"space": space, "floor": floor_for(space), "rows": [vars(r) for r in rows]}
        if self._json:
            return curve
        self.stdout.write(
            f"umbral sin modelo, espacio «{space}» (en uso: {floor_for(space):.2f}); "
            f"{len(questions)} cubiertas, {len(offtopic)} fuera de tema"
        )
        self.stdout.write(f"{'umbral':<8}{'responde':>10}{'correcta':>10}{'rechaza':>10}")
        for row in rows:
            self.stdout.write(
                f"{row.floor:<8.2f}{row.answered:>10.3f}{row.answered_right:>10.3f}"
                f"{row.refused:>10.3f}"
            )
        return curve
