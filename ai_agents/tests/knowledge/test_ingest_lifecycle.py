from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from ai_agents.knowledge import embeddings
from ai_agents.models import Chunk, Document
from ai_agents.services.knowledge import (
    document_ingest,
    knowledge_base_create,
    knowledge_base_update,
)
from ai_agents.services.knowledge_documents import document_add
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant

LONG = "# Catálogo\n\n" + " ".join(
    f"El producto número {i} cuesta {i * 3} euros y se entrega en {i % 5 + 1} días."
    for i in range(60)
)


def _doc(tenant: Tenant, **kb: Any) -> Document:
    base = knowledge_base_create(tenant=tenant, name="Catálogo", **kb)
    return document_add(kb=base, data=LONG.encode(), filename="catalogo.md", enqueue=False).document


@pytest.mark.django_db
def test_reindex_replaces_chunks_atomically(tenant_a: Tenant) -> None:
    document = document_ingest(document=_doc(tenant_a))
    old_ids = set(Chunk.objects.for_tenant(tenant_a).values_list("id", flat=True))
    assert document.status == "ready" and len(old_ids) == document.chunk_count > 1

    knowledge_base_update(kb=document.knowledge_base, chunk_size=400, chunk_overlap=20)
    document = document_ingest(document=Document.objects.for_tenant(tenant_a).get())
    new_ids = set(Chunk.objects.for_tenant(tenant_a).values_list("id", flat=True))
    assert document.status == "ready"
    assert not (old_ids & new_ids)
    assert len(new_ids) == document.chunk_count < len(old_ids)
    ordinals = list(Chunk.objects.for_tenant(tenant_a).values_list("ordinal", flat=True))
    assert sorted(ordinals) == list(range(len(new_ids)))


@pytest.mark.django_db
def test_failure_mid_embedding_keeps_previous_chunks_and_says_why(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert (
        document_ingest(document=_doc(tenant_a, chunk_size=64, chunk_overlap=8)).status == "ready"
    )
    before = set(Chunk.objects.for_tenant(tenant_a).values_list("id", flat=True))
    calls = {"n": 0}
    real = embeddings.local_model().passage

    def flaky(texts: list[str]) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError("boom")
        return real(texts)

    monkeypatch.setattr(embeddings.local_model(), "passage", flaky)
    document_ingest(document=Document.objects.for_tenant(tenant_a).get())
    assert calls["n"] == 2  # failed on the second batch, after progress was saved
    stored = Document.objects.for_tenant(tenant_a).get()
    assert stored.status == "failed"
    # Words for the page; the error's type goes to the log only.
    assert stored.error == "Error interno al procesar el documento."
    crashed = [r.__dict__.get("error") for r in caplog.records if r.msg == "kb.ingest_crashed"]
    assert crashed == ["MemoryError"]
    assert set(Chunk.objects.for_tenant(tenant_a).values_list("id", flat=True)) == before


@pytest.mark.django_db
def test_new_document_failing_leaves_no_chunks(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(texts: list[str]) -> Any:
        raise RuntimeError("engine crashed")

    monkeypatch.setattr(embeddings.local_model(), "passage", broken)
    document = document_ingest(document=_doc(tenant_a))
    assert document.status == "failed"
    assert Chunk.objects.for_tenant(tenant_a).count() == 0
    assert Document.objects.for_tenant(tenant_a).get().chunk_count == 0


@pytest.mark.django_db
def test_google_embeddings_through_gateway_with_usage_rows(
    tenant_a: Tenant, fake_google: Any
) -> None:
    kb = knowledge_base_create(tenant=tenant_a, name="G", embedding_provider="google")
    assert (kb.embedding_model, kb.embedding_dimensions) == ("gemini-embedding-001", 768)
    doc = document_add(kb=kb, data=LONG.encode(), filename="c.md", enqueue=False).document
    doc = document_ingest(document=doc)
    assert doc.status == "ready"
    chunk = Chunk.objects.for_tenant(tenant_a).first()
    assert chunk is not None
    assert chunk.embedding_space == "gemini-embedding-001@768"
    assert len(chunk.embedding) == 768
    rows = UsageLog.objects.for_tenant(tenant_a).filter(operation="embedding")
    assert rows.count() >= 1
    first = rows.first()
    assert first is not None and first.provider == "google"

    from ai_agents.selectors.knowledge import knowledge_search

    # the fake's vector is a hash of the text: the passage's own text finds it first
    query = f"Catálogo\n{chunk.content}"
    hits = knowledge_search(tenant=tenant_a, knowledge_base_ids=[kb.pk], query=query, mode="vector")
    assert hits[0].chunk_id == chunk.pk
    # the query vector is cached: a second search does not call the provider again
    count = rows.count()
    knowledge_search(tenant=tenant_a, knowledge_base_ids=[kb.pk], query=query)
    assert rows.count() == count


@pytest.mark.django_db
def test_paid_embedding_error_fails_the_document_readably(
    tenant_a: Tenant, fake_openai: Any
) -> None:
    from erp.testing.fake_openai import ErrorReply

    fake_openai.script_embeddings(ErrorReply(status=401, message="bad key"))
    kb = knowledge_base_create(tenant=tenant_a, name="O", embedding_provider="openai")
    doc = document_add(kb=kb, data=LONG.encode(), filename="c.md", enqueue=False).document
    doc = document_ingest(document=doc)
    assert doc.status == "failed"
    assert doc.error
    assert Chunk.objects.for_tenant(tenant_a).count() == 0


@pytest.mark.slow
def test_real_worker_ingests_an_upload(celery_worker_process: Any, api_a: APIClient) -> None:
    kb = api_a.post("/api/v1/knowledge-bases", {"name": "W"}, format="json").json()
    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb['id']}/documents",
        {"file": SimpleUploadedFile("faq.md", LONG.encode(), content_type="text/markdown")},
        format="multipart",
    )
    assert response.status_code == 202
    url = f"/api/v1/knowledge-bases/{kb['id']}/documents/{response.json()['id']}"
    deadline = time.monotonic() + 60
    seen = set()
    while time.monotonic() < deadline:
        status = api_a.get(url).json()
        seen.add(status["status"])
        if status["status"] in ("ready", "failed"):
            break
        time.sleep(0.1)
    assert status["status"] == "ready", status
    assert status["chunk_count"] == Chunk.objects.unscoped().count() > 0


@pytest.mark.django_db
def test_search_falls_back_to_full_text_when_the_embedding_provider_fails(
    tenant_a: Tenant, fake_google: Any
) -> None:
    from ai_agents.selectors.knowledge import knowledge_search
    from erp.testing.fake_google import Behaviour

    kb = knowledge_base_create(tenant=tenant_a, name="G", embedding_provider="google")
    doc = document_add(kb=kb, data=LONG.encode(), filename="c.md", enqueue=False).document
    assert document_ingest(document=doc).status == "ready"
    fake_google.push_embed(*[Behaviour(status=401, body={"error": {"code": 401}})] * 5)
    hits = knowledge_search(
        tenant=tenant_a, knowledge_base_ids=[kb.pk, "no-es-un-uuid"], query="producto número 23"
    )
    assert hits and "número 23" in hits[0].content


@pytest.mark.django_db
def test_a_text_with_nul_characters_is_ingested_with_them_replaced(
    api_a: APIClient, tenant_a: Tenant
) -> None:
    # UTF-16 text (its BOM says NUL bytes are expected) holding a U+0000 character.
    text = "# Horario\n\nAbrimos a las 8\u0000 y cerramos a las 20."
    kb = knowledge_base_create(tenant=tenant_a, name="Ayuda")
    upload = SimpleUploadedFile("horario.txt", text.encode("utf-16"), content_type="text/plain")
    response = api_a.post(
        f"/api/v1/knowledge-bases/{kb.pk}/documents", {"file": upload}, format="multipart"
    )
    assert response.status_code == 202, response.json()

    document = document_ingest(document=Document.objects.for_tenant(tenant_a).get())

    assert (document.status, document.error) == ("ready", "")
    contents = list(Chunk.objects.for_tenant(tenant_a).values_list("content", flat=True))
    assert any("Abrimos a las 8\ufffd y cerramos" in c for c in contents)
