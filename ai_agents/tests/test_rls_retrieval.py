"""The retrieval statement is held to the scoped tenant by PostgreSQL itself (row-level
security), even with its own tenant conditions removed."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ai_agents.knowledge import embeddings
from ai_agents.models import Document
from ai_agents.selectors.knowledge import _search_rows, _search_statement
from ai_agents.services.knowledge import document_add, document_ingest, knowledge_base_create
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import all_tenants, tenant_scope

TEXT = "La clave del almacén es ornitorrinco azul. El almacén abre a las ocho."


def _ingest(tenant: Tenant, name: str) -> Document:
    with tenant_scope(tenant):
        kb = knowledge_base_create(tenant=tenant, name=f"kb-{name}")
        added = document_add(kb=kb, data=TEXT.encode(), filename=name, enqueue=False)
        return document_ingest(document=added.document)


@pytest.mark.django_db
def test_the_search_statement_without_its_tenant_filter_returns_only_the_scoped_tenants_chunks(
    tenant_a: Tenant, tenant_b: Any
) -> None:
    doc_a, doc_b = _ingest(tenant_a, "a.txt"), _ingest(tenant_b, "b.txt")
    with tenant_scope(tenant_a):
        kb_a = doc_a.knowledge_base
        vector = embeddings.embed_query(kb_a, "clave del almacén", timeout_s=None, usage=None)
    kb_ids = [doc_a.knowledge_base_id, doc_b.knowledge_base_id]
    sql, params = _search_statement(
        tenant_id=tenant_a.pk,
        vectors=[(kb_a.embedding_space, kb_ids, vector)],
        lexical=(1.0, kb_ids, "clave del almacén"),
        frequent=[],
        limit=50,
        k=50,
    )
    unfiltered = re.sub(r"\b(\w+\.)?tenant_id = %\(tenant\)s", "TRUE", sql)
    assert "tenant" not in unfiltered

    with all_tenants():  # the control: without the filter, both tenants' chunks match
        every = {row[2] for row in _search_rows(unfiltered, params, None)}
    with tenant_scope(tenant_a):
        scoped = {row[2] for row in _search_rows(unfiltered, params, None)}
        in_transaction = {row[2] for row in _search_rows(unfiltered, params, 5000)}
    unscoped = _search_rows(unfiltered, params, None)

    assert every == {doc_a.pk, doc_b.pk}
    assert scoped == in_transaction == {doc_a.pk}
    assert unscoped == []
