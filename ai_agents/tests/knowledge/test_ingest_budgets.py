"""Ingestion under hostile documents: parsers have page, size and time budgets, every failure
is a readable reason on the document, and deleting a document stops its ingestion."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from ai_agents.knowledge import parsers
from ai_agents.knowledge.errors import DocumentError
from ai_agents.models import Chunk, Document
from ai_agents.tests.pdf_samples import pdf_shared_stream
from erp.tasks import ping_database
from erp.testing.celery_worker import worker_running

# Two 22 KB PDFs whose 40 pages all draw one 5 MB content stream: ~10 minutes of pypdf each.
HOSTILE = pdf_shared_stream(pages=40, stream_bytes=5 * 1024 * 1024)
HOSTILE_TOO = pdf_shared_stream(pages=40, stream_bytes=5 * 1024 * 1024, text="Adios mundo")


def test_the_hostile_pdfs_are_small_files() -> None:
    assert len(HOSTILE) < 25_000
    assert len(HOSTILE_TOO) < 25_000
    assert HOSTILE != HOSTILE_TOO


def test_a_pdf_whose_pages_share_a_huge_content_stream_is_refused_within_its_budget() -> None:
    started = time.monotonic()
    with pytest.raises(DocumentError) as refused:
        parsers.parse_document(HOSTILE, filename="catalogo.pdf", mime_type="application/pdf")
    took = time.monotonic() - started

    assert took < 5, f"{took:.1f} s"
    assert str(refused.value) == (
        "El PDF es demasiado complejo: sus páginas suman más de 32 MB de contenido "
        "(página 7 de 40). Divídalo o expórtelo de nuevo como PDF de texto."
    )


def test_a_pdf_over_the_page_budget_is_refused() -> None:
    budget = parsers.ParseBudget(max_pages=10)
    with pytest.raises(DocumentError) as refused:
        parsers.parse_document(
            pdf_shared_stream(pages=11, stream_bytes=200),
            filename="largo.pdf",
            mime_type="application/pdf",
            budget=budget,
        )

    assert str(refused.value) == "El PDF tiene 11 páginas; el máximo es 10."


def test_parsing_that_runs_past_its_time_budget_is_stopped() -> None:
    budget = parsers.ParseBudget(max_seconds=0.5)
    data = pdf_shared_stream(pages=12, stream_bytes=400_000)  # ~1 s of pypdf per page
    started = time.monotonic()
    with pytest.raises(DocumentError) as refused:
        parsers.parse_document(data, filename="lento.pdf", mime_type=None, budget=budget)

    assert time.monotonic() - started < 4
    assert str(refused.value) == (
        "El documento tardó demasiado en leerse (más de 0.5 s). Divídalo en partes más pequeñas."
    )


def test_text_over_the_character_budget_is_refused() -> None:
    budget = parsers.ParseBudget(max_text_chars=1000)
    with pytest.raises(DocumentError) as refused:
        parsers.parse_document(b"hola " * 300, filename="a.txt", mime_type=None, budget=budget)

    assert str(refused.value) == (
        "El documento tiene más de 1000 caracteres de texto. Divídalo en partes más pequeñas."
    )


def test_an_ordinary_pdf_sharing_a_small_stream_still_parses() -> None:
    parsed = parsers.parse_document(
        pdf_shared_stream(pages=3, stream_bytes=200), filename="ok.pdf", mime_type=None
    )

    assert [s.heading_path for s in parsed.sections] == [["Página 1"], ["Página 2"], ["Página 3"]]
    assert parsed.sections[0].text.startswith("Hola mundo")


def _upload(api: APIClient, kb_id: str, *, name: str, data: bytes, mime: str) -> str:
    response = api.post(
        f"/api/v1/knowledge-bases/{kb_id}/documents",
        {"file": SimpleUploadedFile(name, data, content_type=mime)},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    return str(response.json()["id"])


def _wait_status(api: APIClient, url: str, done: set[str], seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        status = api.get(url).json()
        if status["status"] in done or time.monotonic() > deadline:
            return dict(status)
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_hostile_pdfs_fail_readably_and_the_worker_goes_on(
    celery_worker_process: Any, api_a: APIClient
) -> None:
    kb = api_a.post("/api/v1/knowledge-bases", {"name": "W"}, format="json").json()
    base = f"/api/v1/knowledge-bases/{kb['id']}/documents"
    first = _upload(api_a, kb["id"], name="a.pdf", data=HOSTILE, mime="application/pdf")
    second = _upload(api_a, kb["id"], name="b.pdf", data=HOSTILE_TOO, mime="application/pdf")
    ordinary = _upload(
        api_a, kb["id"], name="faq.md", data=b"# FAQ\n\nAbrimos de 9 a 14.\n", mime="text/markdown"
    )

    done = _wait_status(api_a, f"{base}/{ordinary}", {"ready", "failed"}, 60)
    one = api_a.get(f"{base}/{first}").json()
    two = api_a.get(f"{base}/{second}").json()

    assert done["status"] == "ready", done  # both PDFs were dealt with first, within a minute
    assert one["status"] == two["status"] == "failed"
    assert one["error"].startswith("El PDF es demasiado complejo")
    assert two["error"].startswith("El PDF es demasiado complejo")
    assert Chunk.objects.unscoped().filter(document_id__in=[first, second]).count() == 0


CATALOGUE = "# Catálogo\n\n" + "\n\n".join(
    f"## Producto {i}\n\nEl producto número {i} cuesta {i * 3} euros, se entrega en "
    f"{i % 5 + 1} días y tiene garantía de {i % 3 + 1} años en toda la República."
    for i in range(1500)
)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_deleting_a_document_stops_its_ingestion(
    celery_worker_process: Any, api_a: APIClient, tenant_a: Any
) -> None:
    kb = api_a.post("/api/v1/knowledge-bases", {"name": "W"}, format="json").json()
    document_id = _upload(
        api_a, kb["id"], name="catalogo.md", data=CATALOGUE.encode(), mime="text/markdown"
    )
    url = f"/api/v1/knowledge-bases/{kb['id']}/documents/{document_id}"
    seen = _wait_status(api_a, url, {"ready", "failed"}, 0)
    deadline = time.monotonic() + 60
    while not (seen["status"] == "processing" and seen["progress"] > 10):
        assert time.monotonic() < deadline, seen
        assert seen["status"] in ("pending", "processing"), seen
        time.sleep(0.05)
        seen = api_a.get(url).json()

    assert api_a.delete(url).status_code == 204
    started = time.monotonic()
    # The worker (one process) takes the next task only once the ingestion has stopped.
    assert ping_database.delay(tenant_a.pk).get(timeout=20) == tenant_a.slug
    stopped_in = time.monotonic() - started

    assert stopped_in < 20
    assert not Document.objects.unscoped().filter(pk=document_id).exists()
    assert Chunk.objects.unscoped().filter(document_id=document_id).count() == 0
    log = celery_worker_process.log_path.read_text()
    assert "kb.ingest_cancelled" in log


@pytest.fixture
def prefork_worker(transactional_db: Any, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker with Celery's prefork pool (the one that enforces time limits; `make run`
    and compose use it) and a 2-second ingestion limit."""
    limit = {"KB_INGEST_TIME_LIMIT_SECONDS": "2"}
    pool = ("-P", "prefork", "-c", "1")
    with worker_running(tmp_path, pool=pool, prefix="limits", **limit) as proc:
        yield proc


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_ingestion_over_its_time_limit_fails_readably_and_the_worker_goes_on(
    prefork_worker: Any, api_a: APIClient, tenant_a: Any, monkeypatch: Any
) -> None:
    from ai_agents.tasks import bulk_ingest_document

    # The enqueuing process writes the limits into the message (Celery's `timelimit` header):
    # this one is configured like the worker, as every process of a deployment is.
    monkeypatch.setattr(bulk_ingest_document, "soft_time_limit", 2)
    monkeypatch.setattr(bulk_ingest_document, "time_limit", 32)
    monkeypatch.setattr(bulk_ingest_document, "_exec_options", None)  # Celery caches them
    kb = api_a.post("/api/v1/knowledge-bases", {"name": "W"}, format="json").json()
    document_id = _upload(
        api_a, kb["id"], name="catalogo.md", data=CATALOGUE.encode(), mime="text/markdown"
    )
    url = f"/api/v1/knowledge-bases/{kb['id']}/documents/{document_id}"

    status = _wait_status(api_a, url, {"ready", "failed"}, 90)

    assert status["status"] == "failed", prefork_worker.log_path.read_text()[-3000:]
    assert status["error"] == (
        "La indexación superó el tiempo máximo (2 s). Divida el documento en partes más pequeñas."
    )
    assert Chunk.objects.unscoped().filter(document_id=document_id).count() == 0
    assert ping_database.delay(tenant_a.pk).get(timeout=20) == tenant_a.slug
