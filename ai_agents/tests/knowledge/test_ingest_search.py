from __future__ import annotations

from typing import Any

import pytest

from ai_agents.models import Chunk, Document
from ai_agents.selectors.knowledge import knowledge_search
from ai_agents.services.knowledge import document_ingest, knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from erp.tenancy.models import Tenant

HOURS = (
    "# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00 y los sábados de 9:00 a 14:00. "
    "Los domingos permanecemos cerrados.\n\n"
    "# Envíos\n\nEnviamos a toda la península en 48 horas. El envío cuesta 4,95 euros y es "
    "gratis a partir de 50 euros de compra.\n"
)


def _ingest(tenant: Tenant, text: str, name: str = "info.md") -> Document:
    kb = knowledge_base_create(tenant=tenant, name=f"kb-{name}")
    added = document_add(kb=kb, data=text.encode(), filename=name, enqueue=False)
    return document_ingest(document=added.document)


@pytest.mark.django_db
def test_ingest_then_search_finds_the_passage(tenant_a: Tenant) -> None:
    document = _ingest(tenant_a, HOURS)
    assert document.status == "ready"
    assert document.progress == 100
    assert document.chunk_count == Chunk.objects.for_tenant(tenant_a).count() == 2

    hits = knowledge_search(
        tenant=tenant_a,
        knowledge_base_ids=[document.knowledge_base_id],
        query="¿a que hora abren el sabado?",
        k=2,
    )
    assert "sábados de 9:00 a 14:00" in hits[0].content
    assert hits[0].document_title == "info.md"
    assert hits[0].score >= hits[1].score


@pytest.mark.django_db
def test_lexical_search_folds_accents_and_uses_or(tenant_a: Tenant) -> None:
    document = _ingest(tenant_a, HOURS)
    hits = knowledge_search(
        tenant=tenant_a,
        knowledge_base_ids=[document.knowledge_base_id],
        query="envio gratis cuanto cuesta xyzzy",
        k=5,
        mode="lexical",
    )
    assert len(hits) == 1
    assert "gratis" in hits[0].content


@pytest.mark.django_db
def test_search_never_returns_another_tenants_chunks(tenant_a: Tenant, tenant_b: Any) -> None:
    secret = "La clave del almacén de Beta es ornitorrinco azul 7781."
    doc_b = _ingest(tenant_b, secret, "beta.txt")
    doc_a = _ingest(tenant_a, HOURS)
    for mode in ("hybrid", "vector", "lexical"):
        # B's knowledge base id, asked by A: nothing
        assert (
            knowledge_search(
                tenant=tenant_a,
                knowledge_base_ids=[doc_b.knowledge_base_id],
                query=secret,
                mode=mode,
            )
            == []
        )
        hits = knowledge_search(
            tenant=tenant_a,
            knowledge_base_ids=[doc_a.knowledge_base_id, doc_b.knowledge_base_id],
            query=secret,
            mode=mode,
        )
        assert all(h.document_id == doc_a.pk for h in hits)
    assert (
        knowledge_search(
            tenant=tenant_b, knowledge_base_ids=[doc_b.knowledge_base_id], query=secret
        )[0].content
        == secret
    )


@pytest.mark.django_db
def test_min_score_drops_weak_hits(tenant_a: Tenant) -> None:
    document = _ingest(tenant_a, HOURS)
    kb_ids = [document.knowledge_base_id]
    everything = knowledge_search(tenant=tenant_a, knowledge_base_ids=kb_ids, query="envío")
    assert len(everything) == 2
    best = knowledge_search(
        tenant=tenant_a, knowledge_base_ids=kb_ids, query="envío", min_score=everything[0].score
    )
    assert [h.chunk_id for h in best] == [everything[0].chunk_id]
