"""The retrieval statement is held to the scoped tenant by PostgreSQL itself (row-level
security), even with its own tenant conditions removed."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection, transaction

from ai_agents.knowledge import embeddings
from ai_agents.models import Document
from ai_agents.selectors.knowledge import _search_rows, _search_statement
from ai_agents.services.knowledge import document_ingest, knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import all_tenants, tenant_scope
from erp.testing.fixtures import owner_connection

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


@pytest.mark.django_db
def test_full_text_matching_can_still_use_its_index_under_row_security(tenant_a: Tenant) -> None:
    # Only a leakproof operator may use an index before the policy filters the rows; `@@` is
    # marked so by the migration, or the knowledge search would scan every chunk.
    _ingest(tenant_a, "a.txt")
    with tenant_scope(tenant_a), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM ai_agents_chunk "
            "WHERE search_vector @@ to_tsquery('es_unaccent', 'almacen')"
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "chunk_search_vector" in plan


@pytest.mark.django_db(transaction=True)
def test_the_app_role_reads_the_frequent_lexemes_through_the_owners_function(
    tenant_a: Tenant,
) -> None:
    # pg_stats hides a table under row security from the app's role; the search's stop-word
    # list (lexemes frequent across the table) comes through a function run as the owner.
    text = "\n\n".join(f"# Sección {i}\n\nEl almacén número {i} guarda cajas." for i in range(40))
    with tenant_scope(tenant_a):
        kb = knowledge_base_create(tenant=tenant_a, name="kb-many")
        document_ingest(
            document=document_add(
                kb=kb, data=text.encode(), filename="m.md", enqueue=False
            ).document
        )
    with owner_connection() as as_owner:
        as_owner.execute("ANALYZE ai_agents_chunk")
        seen_by_owner = as_owner.execute(
            "SELECT most_common_elems::text::text[] FROM pg_stats "
            "WHERE tablename = 'ai_agents_chunk' AND attname = 'search_vector'"
        ).fetchone()[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'ai_agents_chunk'")
        assert cursor.fetchone() == (0,)
        cursor.execute("SELECT chunk_frequent_lexemes(1)")
        through_the_function = cursor.fetchone()[0]
    assert "guard" in seen_by_owner  # in every chunk ("guarda")
    assert sorted(through_the_function) == sorted(seen_by_owner)
