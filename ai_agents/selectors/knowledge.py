"""Reads for knowledge bases; `knowledge_search` is the retrieval the pipeline uses.

Hybrid search = HNSW cosine (one partial index per embedding space) + Postgres full-text
with OR semantics over the query's lexemes (`es_unaccent`), fused by weighted reciprocal
rank fusion. The tenant condition is inside both SQL statements.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet

from ai_agents.knowledge import embeddings
from ai_agents.knowledge.spaces import INDEXED_SPACES, is_safe_space
from ai_agents.models import Chunk, Document, KnowledgeBase
from erp.llm.errors import LlmError
from erp.tenancy.models import Tenant

logger = logging.getLogger(__name__)

Mode = Literal["hybrid", "vector", "lexical"]
Ranking = list[tuple[uuid.UUID, int]]  # (chunk id, rank from 1)

RRF_K = 60
CANDIDATES = 40  # per list, before fusion


@dataclass(frozen=True)
class SearchHit:
    chunk_id: uuid.UUID
    document_id: uuid.UUID
    document_title: str
    content: str
    heading_path: list[str]
    score: float  # fused score, 1.0 = first in both lists (see `_normalised`)


def _is_uuid(value: uuid.UUID | str) -> bool:
    if isinstance(value, uuid.UUID):
        return True
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def knowledge_base_list(*, tenant: Tenant) -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.for_tenant(tenant).order_by("name")


def document_list(*, kb: KnowledgeBase) -> QuerySet[Document]:
    return Document.objects.for_tenant(kb.tenant_id).filter(knowledge_base=kb).defer("data")


def _vector_ranking(
    *, tenant_id: int, kb_ids: Sequence[uuid.UUID], space: str, vector: list[float], limit: int
) -> list[uuid.UUID]:
    if not is_safe_space(space):
        return []
    dims = len(vector)
    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    # The space is inlined so the planner can prove the partial index's predicate.
    # space: checked by is_safe_space; dims: an int.
    sql = (
        "SELECT id FROM ai_agents_chunk "  # noqa: S608
        f"WHERE tenant_id = %s AND knowledge_base_id = ANY(%s) AND embedding_space = '{space}' "
        f"ORDER BY embedding::vector({dims}) <=> %s::vector({dims}) LIMIT %s"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        if space in INDEXED_SPACES:
            ef = max(limit, int(settings.KB_HNSW_EF_SEARCH))
            cursor.execute(f"SET LOCAL hnsw.ef_search = {ef}")
            cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        cursor.execute(sql, [tenant_id, list(kb_ids), literal, limit])
        return [row[0] for row in cursor.fetchall()]


# OR over the query's lexemes. A lexeme estimated (planner statistics of the column, refreshed
# by ANALYZE/autovacuum) to occur in `df` or more chunks is dropped, like a stop word: it barely
# discriminates, and ranking all its matches would cost O(matches). Lexemes missing from the
# statistics are rare by definition and kept. Small tables never drop anything.
LEXICAL_SQL = """
WITH stats AS (
    SELECT s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs,
           c.reltuples AS total
    FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
    WHERE s.schemaname = current_schema() AND s.tablename = 'ai_agents_chunk'
      AND s.attname = 'search_vector'
), terms AS (
    SELECT DISTINCT lexeme
    FROM unnest(tsvector_to_array(to_tsvector('es_unaccent', %(query)s))) AS lexeme
), kept AS (
    SELECT t.lexeme FROM terms t
    LEFT JOIN stats st ON true
    WHERE coalesce(st.freqs[array_position(st.elems, t.lexeme)] * st.total, 0) < %(df)s
), q AS (
    SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS query FROM kept
)
SELECT c.id, ts_rank(c.search_vector, q.query) AS rank FROM ai_agents_chunk c, q
WHERE q.query IS NOT NULL AND c.tenant_id = %(tenant)s AND c.knowledge_base_id = ANY(%(kbs)s)
  AND c.search_vector @@ q.query
ORDER BY rank DESC, c.id
LIMIT %(limit)s
"""


def _lexical_ranking(
    *, tenant_id: int, kb_ids: Sequence[uuid.UUID], query: str, limit: int
) -> Ranking:
    with connection.cursor() as cursor:
        params = {
            "query": query,
            "tenant": tenant_id,
            "kbs": list(kb_ids),
            "df": int(settings.KB_LEXICAL_MAX_DF),
            "limit": limit,
        }
        cursor.execute(LEXICAL_SQL, params)
        rows = cursor.fetchall()
    # Equal ts_rank values share a rank (short queries tie often): no arbitrary order.
    ranking: Ranking = []
    previous: float | None = None
    for position, (chunk_id, score) in enumerate(rows, start=1):
        rank = ranking[-1][1] if previous is not None and score == previous else position
        ranking.append((chunk_id, rank))
        previous = score
    return ranking


def _ranked(ids: list[uuid.UUID]) -> Ranking:
    return [(chunk_id, rank) for rank, chunk_id in enumerate(ids, start=1)]


def _fuse(rankings: Iterable[tuple[float, Ranking]]) -> dict[uuid.UUID, float]:
    scores: dict[uuid.UUID, float] = defaultdict(float)
    for weight, ranking in rankings:
        for chunk_id, rank in ranking:
            scores[chunk_id] += weight / (RRF_K + rank)
    return scores


def knowledge_search(
    *,
    tenant: Tenant,
    knowledge_base_ids: Sequence[uuid.UUID | str],
    query: str,
    k: int = 5,
    min_score: float | None = None,
    mode: Mode = "hybrid",
) -> list[SearchHit]:
    """The `k` best chunks of these knowledge bases (of `tenant` only), best first.

    `score` is the fused reciprocal-rank score divided by its maximum (first in every list),
    so it lies in (0, 1]; `min_score` drops hits below it.
    """
    query = (query or "").strip()
    if not query or k <= 0:
        return []
    wanted = [kb_id for kb_id in knowledge_base_ids if _is_uuid(kb_id)]
    kbs = list(knowledge_base_list(tenant=tenant).filter(pk__in=wanted))
    if not kbs:
        return []
    kb_ids = [kb.pk for kb in kbs]
    limit = max(CANDIDATES, k)
    lexical_weight = float(settings.KB_LEXICAL_WEIGHT)
    rankings: list[tuple[float, Ranking]] = []
    if mode in ("hybrid", "vector"):
        by_space: dict[str, list[KnowledgeBase]] = defaultdict(list)
        for kb in kbs:
            by_space[kb.embedding_space].append(kb)
        for space, group in by_space.items():
            try:
                vector = embeddings.embed_query(group[0], query)
            except LlmError as exc:
                # A paid embedding provider is down: full-text still answers in hybrid mode.
                logger.warning(
                    "kb.query_embedding_failed",
                    extra={"space": space, "error": type(exc).__name__},
                )
                if mode == "vector":
                    raise
                continue
            ids = _vector_ranking(
                tenant_id=tenant.pk,
                kb_ids=[kb.pk for kb in group],
                space=space,
                vector=vector,
                limit=limit,
            )
            rankings.append((1.0, _ranked(ids)))
    if mode in ("hybrid", "lexical"):
        lexical = _lexical_ranking(tenant_id=tenant.pk, kb_ids=kb_ids, query=query, limit=limit)
        rankings.append((lexical_weight if mode == "hybrid" else 1.0, lexical))
    best_possible = sum(w for w, _ids in rankings) / (RRF_K + 1)
    fused = _fuse(rankings)
    top = sorted(fused.items(), key=lambda item: (-item[1], str(item[0])))
    hits = [(cid, round(score / best_possible, 6)) for cid, score in top]
    if min_score is not None:
        hits = [(cid, s) for cid, s in hits if s >= min_score]
    hits = hits[:k]
    return _load_hits(tenant, hits)


def _load_hits(tenant: Tenant, hits: list[tuple[uuid.UUID, float]]) -> list[SearchHit]:
    if not hits:
        return []
    rows: dict[Any, Chunk] = {
        c.pk: c
        for c in Chunk.objects.for_tenant(tenant)
        .filter(pk__in=[cid for cid, _s in hits])
        .select_related("document")
        .only("id", "content", "heading_path", "document_id", "document__title")
    }
    return [
        SearchHit(
            chunk_id=cid,
            document_id=rows[cid].document_id,
            document_title=rows[cid].document.title,
            content=rows[cid].content,
            heading_path=list(rows[cid].heading_path),
            score=score,
        )
        for cid, score in hits
        if cid in rows
    ]
