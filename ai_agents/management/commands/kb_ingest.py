from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Sum

from ai_agents.models import Document
from ai_agents.services.knowledge import KnowledgeError, knowledge_base_get_or_create
from ai_agents.services.knowledge_documents import document_add_and_ingest
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope

BAR_WIDTH = 30


def _files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(p for p in sorted(path.rglob("*")) if p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise CommandError(f"No existe: {raw}")
    return found


class Command(BaseCommand):
    help = (
        "Ingiere archivos (o carpetas) en una base de conocimiento, creándola si no existe. "
        "Procesa en este proceso (no necesita worker) y muestra el progreso."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="identificador de la empresa")
        parser.add_argument("kb_name", help="nombre de la base de conocimiento")
        parser.add_argument("paths", nargs="+", help="archivos o carpetas")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["slug"]).first()
        if tenant is None:
            raise CommandError(f"Empresa desconocida: {options['slug']}")
        files = _files(options["paths"])
        failures = 0
        with tenant_scope(tenant):
            kb, _created = knowledge_base_get_or_create(tenant=tenant, name=options["kb_name"])
            for index, path in enumerate(files, start=1):
                label = f"[{index}/{len(files)}] {path.name[:40]}"
                if path.stat().st_size > settings.UPLOAD_MAX_BYTES:
                    failures += 1
                    self.stderr.write(
                        f"{label}: demasiado grande (máx. {settings.UPLOAD_MAX_BYTES} bytes)"
                    )
                    continue
                self._bar(label, 0)
                try:
                    added = document_add_and_ingest(
                        kb=kb,
                        data=path.read_bytes(),
                        filename=path.name,
                        on_progress=partial(self._bar, label),
                    )
                except KnowledgeError as exc:
                    failures += 1
                    self.stderr.write(f"\r{label}: {exc}")
                    continue
                document = (
                    Document.objects.for_tenant(tenant).defer("data").get(pk=added.document.pk)
                )
                if document.status == Document.Status.FAILED:
                    failures += 1
                    self.stderr.write(f"\r{label}: {document.error}")
                else:
                    note = "" if added.created else " (sin cambios)"
                    self._bar(label, 100)
                    self.stderr.write(f" {document.chunk_count} fragmentos{note}")
            ready = Document.objects.for_tenant(tenant).filter(
                knowledge_base=kb, status=Document.Status.READY
            )
            chunks = ready.aggregate(total=Sum("chunk_count"))["total"] or 0
            self.stdout.write(f"{ready.count()} documents, {chunks} chunks")
        if failures:
            raise CommandError(f"{failures} archivo(s) con error")

    def _bar(self, label: str, percent: int) -> None:
        filled = BAR_WIDTH * percent // 100
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        self.stderr.write(f"\r{label} [{bar}] {percent:3d}%", ending="")
        if percent >= 100 or not sys.stderr.isatty():
            self.stderr.flush()
